import { FormError, type ConsoleScope, action, field, page, perform, render, signedIn, stepUpWith } from './session.js';
import type { FastifyReply } from 'fastify';
import { units } from './format.js';

const SUBSYSTEMS = ['mail', 'alerts', 'chain-access', 'auth-provider'] as const;

/**
 * The operator's pages: the fleet and the admissions switch, the withdrawal review queue, held and refundable
 * deposits, subsystem tests, tickets.
 */
export function registerAdminPages(c: ConsoleScope): void {
  // Admin pages are for admins; anyone else gets the same refusal the API gives.
  const admin = async (request: Parameters<typeof signedIn>[1], reply: FastifyReply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return null;
    if (who.account.role !== 'admin') {
      await render(request, reply, 'refused', { title: 'Refused', account: who.account }, 403);
      return null;
    }
    return who;
  };

  page(c, '/admin', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const fleet = await who.api.call('GET', '/api/v1/admin/fleet');
    const admissions = await who.api.get('/api/v1/admin/admissions');
    const ledger = await who.api.call('GET', '/api/v1/admin/ledger/summary');
    return render(request, reply, 'admin', {
      title: 'Fleet',
      account: who.account,
      fleet: fleet.status === 200 ? fleet.body : null,
      fleetRefused: fleet.status === 200 ? null : fleet.body?.error?.message,
      // The treasury's last reconciliation in this process rides on the fleet read (absent before the first run).
      treasury: fleet.status === 200 ? (fleet.body.treasury ?? null) : null,
      units,
      admissions,
      ledger: ledger.status === 200 ? ledger.body : null,
    });
  });

  action(c, '/admin/admissions', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    return perform(c, reply, '/console/admin', async () => {
      const enabled = request.body?.enabled;
      if (enabled !== 'true' && enabled !== 'false') throw new FormError('Choose to pause or to resume admissions.');
      const reason = field(request.body, 'reason', 'The reason');
      await stepUpWith(who.api, request.body?.totp_code);
      await who.api.post('/api/v1/admin/admissions', { enabled: enabled === 'true', reason });
      return enabled === 'true'
        ? 'Admissions resumed: new jobs and credits are accepted.'
        : 'Admissions paused: no new jobs or credits; running jobs go on.';
    });
  });

  page(c, '/admin/withdrawals', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const queue = await who.api.get('/api/v1/admin/withdrawals?state=UNSIGNED&limit=100');
    const recent = await who.api.get('/api/v1/admin/withdrawals?limit=20');
    return render(request, reply, 'admin-withdrawals', {
      title: 'Withdrawal review',
      account: who.account,
      queue: queue.items,
      recent: recent.items,
    });
  });

  action<{ id: string }>(c, '/admin/withdrawals/:id/review', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    return perform(c, reply, '/console/admin/withdrawals', async () => {
      const decision = request.body?.decision;
      if (decision !== 'approve' && decision !== 'reject') throw new FormError('Choose approve or reject.');
      const reason = field(request.body, 'reason', 'The reason');
      if (reason.length < 5) throw new FormError('Give a reason of at least 5 characters: it is audited.');
      await stepUpWith(who.api, request.body?.totp_code);
      const reviewed = await who.api.post(`/api/v1/admin/withdrawals/${id}/review`, { decision, reason });
      return decision === 'approve'
        ? `Approved ${reviewed.kind} ${reviewed.id.slice(0, 8)}: it is signed and sent next (${reviewed.state}).`
        : `Rejected ${reviewed.kind} ${reviewed.id.slice(0, 8)}: its amount returns to the account.`;
    });
  });

  page(c, '/admin/deposits', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const held = await who.api.get('/api/v1/admin/deposits?state=HELD&limit=100');
    const refunding = await who.api.get('/api/v1/admin/deposits?state=REFUNDING&limit=100');
    const small = await who.api.get('/api/v1/admin/deposits?state=BELOW_MINIMUM&limit=100');
    return render(request, reply, 'admin-deposits', {
      title: 'Held deposits',
      account: who.account,
      held: held.items,
      refunding: refunding.items,
      small: small.items,
    });
  });

  action<{ id: string }>(c, '/admin/deposits/:id/resolve', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    return perform(c, reply, '/console/admin/deposits', async () => {
      const action = request.body?.action;
      if (action !== 'credit' && action !== 'refund') throw new FormError('Choose to credit or to refund.');
      const reason = field(request.body, 'reason', 'The reason');
      if (reason.length < 5) throw new FormError('Give a reason of at least 5 characters: it is audited.');
      await stepUpWith(who.api, request.body?.totp_code);
      const done = await who.api.post(`/api/v1/admin/deposits/${id}/${action}`, { reason });
      return action === 'credit'
        ? `Credited deposit ${done.deposit_id.slice(0, 8)} over the cap (${done.state}).`
        : `Refunding deposit ${done.deposit_id.slice(0, 8)} to ${done.refund_to}: the payout wallet pays it next.`;
    });
  });

  page(c, '/admin/subsystems', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    return render(request, reply, 'admin-subsystems', { title: 'Subsystems', account: who.account, subsystems: SUBSYSTEMS });
  });

  action(c, '/admin/subsystems', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    return perform(c, reply, '/console/admin/subsystems', async () => {
      const subsystem = field(request.body, 'subsystem', 'The subsystem');
      const provider = request.body?.provider;
      const result = await who.api.post('/api/v1/admin/settings/test', {
        subsystem,
        ...(subsystem === 'auth-provider' && (provider === 'github' || provider === 'google') ? { provider } : {}),
      });
      if (!result.ok) throw new FormError(`${subsystem}: failed: ${result.detail}`);
      return `${subsystem}: ok: ${result.detail}`;
    });
  });

  page(c, '/admin/tickets', async (request, reply) => {
    const who = await admin(request, reply);
    if (!who) return reply;
    const state = ['open', 'closed'].includes(request.query.state ?? '') ? `&state=${request.query.state}` : '';
    const tickets = await who.api.get(`/api/v1/admin/tickets?limit=100${state}`);
    return render(request, reply, 'admin-tickets', { title: 'Tickets', account: who.account, tickets: tickets.items });
  });
}
