import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Executor } from './db.js';

// Single-holder leases on a per-network row (the chain watcher's in chain_watch_state, the payer's in
// payout_wallet_state). A holder renews its own live lease; a takeover (the row free, expired, or the holder's own
// expired lease) is a compare-and-set on the fencing token, which grows by one, and is logged in lease_changes with
// the lease it ended, so "never two holders at once" can be checked afterwards. The writes a holder makes under the
// lease (moveCursor, claimNonce) check owner and expiry at the write itself, with the clock read at that moment: a
// replica paused past its lease (SIGSTOP) that wakes and writes finds another owner, or its own lease expired, and
// the write matches no row.

/** A lease holder's name: host and PID (which process holds it, for operators and the cluster test) and a nonce. */
export function leaseOwnerName(): string {
  return `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
}

export type LeaseTable = 'chain_watch_state' | 'payout_wallet_state';

/** Takes or renews a network's lease; true when `owner` holds it now (until now + leaseMs). */
export async function takeLease(
  db: Executor,
  table: LeaseTable,
  chainId: number,
  owner: string,
  now: Date,
  leaseMs: number,
): Promise<boolean> {
  const nowIso = now.toISOString();
  const until = new Date(now.getTime() + leaseMs).toISOString();
  const renewed = await db
    .updateTable(table)
    .set({ lease_until: until })
    .where('chain_id', '=', BigInt(chainId))
    .where('lease_owner', '=', owner)
    .where('lease_until', '>=', nowIso)
    .executeTakeFirst();
  if (renewed.numUpdatedRows === 1n) return true;
  const row = await db
    .selectFrom(table)
    .select(['lease_owner', 'lease_until', 'lease_token'])
    .where('chain_id', '=', BigInt(chainId))
    .executeTakeFirst();
  if (!row) return false;
  if (row.lease_owner !== null && row.lease_until !== null && row.lease_until >= nowIso) return false;
  const token = row.lease_token + 1n;
  const taken = await db
    .updateTable(table)
    .set({ lease_owner: owner, lease_until: until, lease_token: token })
    .where('chain_id', '=', BigInt(chainId))
    .where('lease_token', '=', row.lease_token)
    .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_until', 'is', null), eb('lease_until', '<', nowIso)]))
    .executeTakeFirst();
  if (taken.numUpdatedRows !== 1n) return false;
  await db
    .insertInto('lease_changes')
    .values({
      id: randomUUID(),
      lease: `${table === 'chain_watch_state' ? 'chain_watch' : 'payer'}:${chainId}`,
      owner,
      token,
      acquired_at: nowIso,
      until,
      previous_owner: row.lease_owner,
      previous_until: row.lease_owner === null ? null : row.lease_until,
    })
    .execute();
  return true;
}
