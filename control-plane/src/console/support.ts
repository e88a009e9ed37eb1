import { type ConsoleScope, action, field, flash, page, perform, render, signedIn } from './session.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Support for everyone: one's own tickets, a new one, a ticket's messages and a reply (opener, host or operator). */
export function registerSupportPages(c: ConsoleScope): void {
  page(c, '/tickets', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const tickets = await who.api.get('/api/v1/tickets?limit=100');
    return render(request, reply, 'tickets', {
      title: 'Support',
      account: who.account,
      tickets: tickets.items,
      jobId: UUID.test(request.query.job ?? '') ? request.query.job : '',
    });
  });

  action(c, '/tickets', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    let created: string;
    try {
      const jobId = (request.body?.job_id ?? '').trim();
      const ticket = await who.api.post<{ ticket_id: string }>('/api/v1/tickets', {
        category: field(request.body, 'category', 'The category'),
        text: field(request.body, 'text', 'Your message'),
        ...(jobId === '' ? {} : { job_id: jobId }),
      });
      created = ticket.ticket_id;
    } catch (error) {
      // Said on the form's page, as every refused form is.
      return perform(c, reply, '/console/tickets', () => Promise.reject(error));
    }
    // Straight to the new ticket.
    flash(c, reply, 'ok', 'Ticket opened: an operator answers here.');
    return reply.redirect(`/console/tickets/${created}`, 303);
  });

  page<{ id: string }>(c, '/tickets/:id', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const ticket = await who.api.get(`/api/v1/tickets/${encodeURIComponent(request.params.id)}`);
    return render(request, reply, 'ticket', { title: `Ticket ${ticket.ticket_id.slice(0, 8)}`, account: who.account, ticket });
  });

  action<{ id: string }>(c, '/tickets/:id/messages', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    return perform(c, reply, `/console/tickets/${id}`, async () => {
      await who.api.post(`/api/v1/tickets/${id}/messages`, { text: field(request.body, 'text', 'Your message') });
      return 'Message sent.';
    });
  });
}
