import type { HeartbeatMessage } from '@ark/shared';
import { iso } from '../../clock.js';
import { changesOnlyLastSeen, onHeartbeat } from '../../domain/machines/go-live.js';
import { type Executor, fromJson, toBool } from '../../store/db.js';
import { type MachineLiveFactsRow, readMachineLiveFacts } from '../../store/machine-live-facts.js';
import { findMachine, writeHeartbeat, writeLiveness } from '../../store/machines.js';
import { markOfferListed } from '../../store/offers.js';
import { extendOnlineIntervals } from '../../store/reliability.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';
import type { HostingDeps } from './deps.js';

// Heartbeats drive liveness and the go-live state (waiting -> live on the first healthy one, which lists the offer).

/**
 * A heartbeat as the channel delivers it: one that changes nothing but last-seen goes to the write-behind buffer;
 * any other is applied at once in its own transaction. The check is a read outside any transaction (of a few columns,
 * batched with other heartbeats' on PostgreSQL: store/machine-live-facts.ts); a state change
 * racing it (the host turning go-live on) is picked up by the next heartbeat, as a heartbeat just before the change
 * would have been. Returns whether the heartbeat was applied at once.
 */
export async function recordHeartbeat(deps: HostingDeps, machineId: string, heartbeat: HeartbeatMessage, now: Date): Promise<boolean> {
  const machine = deps.liveFacts
    ? await deps.liveFacts.read(machineId)
    : (await readMachineLiveFacts(deps.store, [machineId])).get(machineId);
  if (!machine) return false;
  const next = onHeartbeat(machine.live_state, machine.live_error, heartbeat);
  if (changesOnlyLastSeen(liveFactsOf(machine), heartbeat, next)) {
    await deps.heartbeats.add(machineId, now, BigInt(heartbeat.uptime_s));
    return false;
  }
  deps.heartbeats.forget(machineId);
  await inTransactionWithRetry(deps.store, (trx) =>
    applyHeartbeat(trx, machineId, heartbeat, now, deps.admissions, deps.settings.onlineGraceMs),
  );
  return true;
}

/**
 * Applies a heartbeat inside the caller's transaction: liveness (last_heartbeat_at, at the control plane's clock,
 * never the agent's) and the go-live transition by compare-and-set, so a racing heartbeat never moves it twice. When
 * the machine goes live its offer is listed (unverified) in the same transaction, if the paid-admission guard lets a
 * host publication in: while admission is paused the machine keeps waiting (an offer_publication authorization of the
 * host's is spent instead), and goes live on its first healthy heartbeat after the resume.
 */
export async function applyHeartbeat(
  db: Executor,
  machineId: string,
  heartbeat: HeartbeatMessage,
  now: Date,
  admissions?: PaidAdmissionGuard,
  onlineGraceMs = 45_000,
): Promise<void> {
  const machine = await findMachine(db, machineId);
  if (!machine) return;
  let next = onHeartbeat(machine.live_state, machine.live_error, heartbeat);
  if (next.wentLive && admissions) {
    const admitted = await admissions.tryAdmit(db, {
      accountId: machine.owner_account_id,
      kind: 'offer_publication',
      anyOfAccount: true,
      reference: `machine:${machine.id}`,
    });
    if (!admitted) next = { ...next, live: machine.live_state, error: machine.live_error, wentLive: false };
  }
  const write = {
    at: now,
    healthy: heartbeat.healthy,
    problems: heartbeat.problems,
    uptimeS: BigInt(heartbeat.uptime_s),
    live: next.live,
    liveError: next.error,
  };
  if (!(await writeHeartbeat(db, machineId, write, machine.live_state))) {
    // The state moved under us: record liveness only; the winner applied the transition.
    await writeLiveness(db, machineId, write);
  } else if (next.wentLive) {
    await markOfferListed(db, machineId, now);
  }
  // Reliability: the heartbeat extends the machine's online interval (or starts one after a gap past the grace).
  await extendOnlineIntervals(db, [{ machineId, at: iso(now), cutoff: iso(new Date(now.getTime() - onlineGraceMs)) }]);
}

function liveFactsOf(machine: MachineLiveFactsRow) {
  return {
    seenBefore: machine.last_heartbeat_at !== null,
    live: machine.live_state,
    error: machine.live_error,
    healthy: machine.healthy === null ? null : toBool(machine.healthy),
    problems: fromJson<string[]>(machine.problems) ?? [],
  };
}
