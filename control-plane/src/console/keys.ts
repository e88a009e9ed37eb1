import { ApiError } from './api.js';
import { type ConsoleScope, action, field, page, perform, render, signedIn } from './session.js';

/** The account's saved SSH public keys (GET/POST/DELETE /api/v1/account/ssh-keys): the rent form offers them. */
export function registerKeyPages(c: ConsoleScope): void {
  page(c, '/keys', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const keys = await who.api.call('GET', '/api/v1/account/ssh-keys?limit=100');
    return render(request, reply, 'keys', {
      title: 'SSH keys',
      account: who.account,
      keys: keys.status === 200 ? keys.body.items : [],
      refused: keys.status === 200 ? null : keys.body?.error?.message,
    });
  });

  action(c, '/keys', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, '/console/keys', async () => {
      const label = request.body?.label?.trim();
      const added = await who.api.post('/api/v1/account/ssh-keys', {
        public_key: field(request.body, 'public_key', 'The public key'),
        ...(label ? { label } : {}),
      });
      return `Key saved: ${added.fingerprint}. The rent form offers it.`;
    });
  });

  action<{ id: string }>(c, '/keys/:id/remove', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, '/console/keys', async () => {
      const answer = await who.api.call('DELETE', `/api/v1/account/ssh-keys/${encodeURIComponent(request.params.id)}`);
      if (answer.status !== 200) throw new ApiError(answer);
      return 'Key removed. Jobs that run with it keep it until they end.';
    });
  });
}
