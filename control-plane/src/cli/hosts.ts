import { systemClock } from '../clock.js';
import { normalizeEmail } from '../domain/accounts/account.js';
import { openConfiguredStore } from '../runtime.js';
import { findAccountByEmail } from '../store/accounts.js';
import { appendAudit } from '../store/audit.js';
import type { Store } from '../store/db.js';
import { isHostEnabled, setHostingBlocked } from '../store/hosts.js';
import { type CliCommand, registerCliCommands } from './index.js';

// Operator commands for hosting: the admin block (no new machines, no offer commits).

export class HostsCliRefusal extends Error {}

/** `hosts block` / `hosts unblock`: sets the account's hosting block, audited with the operator's reason. */
export async function setHostingBlockCommand(store: Store, input: { email: string; blocked: boolean; reason: string }, now: Date) {
  const reason = input.reason.trim();
  if (reason.length < 5) throw new HostsCliRefusal('--reason must say why, in at least 5 characters');
  return store.db.transaction().execute(async (trx) => {
    const account = await findAccountByEmail(trx, normalizeEmail(input.email));
    if (!account) throw new HostsCliRefusal(`no account with email ${input.email.trim()}`);
    await setHostingBlocked(trx, account.id, input.blocked, now);
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: input.blocked ? 'hosting.blocked_by_operator' : 'hosting.unblocked_by_operator',
      subject: account.id,
      detail: { reason },
    });
    return {
      account_id: account.id,
      email: account.email,
      hosting_blocked: input.blocked,
      host_enabled: await isHostEnabled(trx, account.id),
    };
  });
}

function blockCommand(blocked: boolean): CliCommand {
  const name = blocked ? 'hosts block' : 'hosts unblock';
  return {
    name,
    usage: `${name} --email E --reason R`,
    options: { email: { type: 'string' }, reason: { type: 'string' } },
    async run(values, ctx) {
      const email = typeof values.email === 'string' ? values.email : '';
      const reason = typeof values.reason === 'string' ? values.reason : '';
      if (!email) {
        process.stderr.write(`ark-cp ${name}: --email is required\n`);
        return 2;
      }
      const store = await openConfiguredStore(ctx.config);
      try {
        const result = await setHostingBlockCommand(store, { email, blocked, reason }, systemClock.now());
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        return 0;
      } catch (error) {
        if (error instanceof HostsCliRefusal) {
          process.stderr.write(`ark-cp ${name}: ${error.message}\n`);
          return 1;
        }
        throw error;
      } finally {
        await store.close();
      }
    },
  };
}

export const hostCommands: CliCommand[] = [blockCommand(true), blockCommand(false)];

registerCliCommands(hostCommands);
