import { type HardwareReceiptMessage, type RunSelftestBody, verifyHardwareReceipt } from '@ark/shared';
import { iso } from '../../clock.js';
import { PLATFORM_OWNER } from '../../domain/ledger/accounts.js';
import { type Contradiction, receiptContradictions } from '../../domain/machines/hardware-receipts.js';
import { uuidV7 } from '../../domain/tickets/ticket.js';
import type { Tx } from '../../store/db.js';
import {
  claimSelftest,
  findMachineVerification,
  insertHardwareReceipt,
  insertMachineVerification,
  latestHardwareReceipts,
  lockMachineVerification,
  machinesDueSelftest,
  type MachineVerification,
  postponeSelftest,
  writeMachineVerification,
} from '../../store/hardware-receipts.js';
import { findMachine } from '../../store/machines.js';
import type { QueuedCommand } from '../../store/outbox.js';
import { insertTicket, insertTicketMessage, lockTicket } from '../../store/tickets.js';
import { type CommitHook, inTransactionWithRetry, transact } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import { type HostingDeps, type MachineCaller, machineForCaller } from './deps.js';
import { toMachineRecord } from './records.js';

/** Why a receipt was refused (the ark_hardware_receipts_refused_total label). */
export type ReceiptRefusal = 'forged' | 'tampered' | 'wrong_machine' | 'replayed' | 'unknown_machine';

/**
 * Refused receipts counted in plain numbers by reason; the metrics registry reads them when scraped (app.ts), so the
 * use case needs no Prometheus client.
 */
export class ReceiptRefusalCounts {
  readonly byReason = new Map<ReceiptRefusal, number>();
  add(reason: ReceiptRefusal): void {
    this.byReason.set(reason, (this.byReason.get(reason) ?? 0) + 1);
  }
}

/** Receipts the public view shows, newest first. */
export const VERIFICATION_RECEIPTS_SHOWN = 10;

/**
 * The 'hardware_receipt' handler, inside the gateway's apply-once transaction. The receipt is checked against the
 * machine's enrolled key and id (shared/src/channel/receipts.ts): a forged, tampered, wrong-machine or replayed one is
 * counted and dropped; the message is still acknowledged (it is applied: as a refusal), so the agent never resends
 * it. An accepted one is stored exactly as signed; the machine's score and verified_at follow its latest ok receipt
 * with a benchmark; a receipt that contradicts the declared hardware unlists the machine and tells its host (a
 * support case and `machine.unlisted`), and a later one that agrees lists it again (`machine.relisted`).
 */
export async function applyHardwareReceipt(
  deps: HostingDeps,
  trx: Tx,
  machineId: string,
  msg: HardwareReceiptMessage,
  now: Date,
): Promise<ReceiptRefusal | null> {
  const refuse = (reason: ReceiptRefusal): ReceiptRefusal => {
    deps.receiptRefusals.add(reason);
    return reason;
  };
  const row = await findMachine(trx, machineId);
  if (!row) return refuse('unknown_machine');
  const check = verifyHardwareReceipt({ receipt: msg.receipt, signature: msg.signature }, row.public_key, machineId);
  if (!check.ok) {
    if (check.reason === 'bad_signature') return refuse('forged');
    if (check.reason === 'wrong_machine') return refuse('wrong_machine');
    return refuse('tampered');
  }
  const body = check.body;
  const machine = toMachineRecord(row);
  await insertMachineVerification(trx, {
    machineId,
    ownerAccountId: machine.ownerAccountId,
    nextSelftestAt: new Date(now.getTime() + deps.settings.selftest.intervalMs),
    now,
  });
  const standing = await lockMachineVerification(trx, machineId);
  if (!standing) throw new Error(`machine_verification row missing for ${machineId}`);
  if (body.receipt_seq <= standing.lastReceiptSeq) return refuse('replayed');

  await insertHardwareReceipt(trx, {
    machineId,
    receiptSeq: body.receipt_seq,
    receipt: msg.receipt,
    signature: msg.signature,
    trigger: body.trigger,
    ok: body.ok,
    score: check.score,
    measuredAt: body.measured_at,
    now,
  });
  const contradictions = receiptContradictions(machine.manifest, body, check.score);
  const next: MachineVerification = { ...standing, lastReceiptSeq: body.receipt_seq, contradictions };
  if (check.score !== null) {
    next.score = check.score;
    next.verifiedAt = body.measured_at;
  }
  if (contradictions.length > 0 && !standing.unlisted) {
    next.unlisted = true;
    next.unlistedSince = iso(now);
    next.ticketId = await tellHost(trx, standing, unlistedText(machine.hostname, machineId, body.receipt_seq, contradictions), now);
    await emitWebhookEvent(
      trx,
      machine.ownerAccountId,
      'machine.unlisted',
      { machine_id: machineId, receipt_seq: body.receipt_seq, reasons: contradictions, ticket_id: next.ticketId },
      now,
    );
  } else if (contradictions.length === 0 && standing.unlisted) {
    next.unlisted = false;
    next.unlistedSince = null;
    await tellHost(trx, standing, `Receipt ${body.receipt_seq} agrees with the declared hardware: the machine is listed again.`, now);
    await emitWebhookEvent(
      trx,
      machine.ownerAccountId,
      'machine.relisted',
      { machine_id: machineId, receipt_seq: body.receipt_seq, score: next.score },
      now,
    );
  }
  await writeMachineVerification(trx, next, now);
  return null;
}

function unlistedText(hostname: string, machineId: string, receiptSeq: number, contradictions: Contradiction[]): string {
  return [
    `Your machine ${hostname} (${machineId}) is unlisted: its signed self-test receipt ${receiptSeq} contradicts the hardware it declared.`,
    ...contradictions.map((c) => `- ${c.message}`),
    'New rentals are refused until a later receipt agrees with the declared hardware; running jobs are not touched.',
    `Fix the machine (or enroll it again with what it really has), then ask for a self-test: \`ark machines selftest ${machineId}\` ` +
      `or POST /api/v1/hosts/machines/${machineId}/selftest. A receipt that agrees lists it again.`,
  ].join('\n');
}

/**
 * Tells the host on its hardware case: opened on the host's account at the first unlisting (so the host reads, answers
 * and closes it like any case of its own), written by the platform; later news is added to the same case.
 */
async function tellHost(trx: Tx, standing: MachineVerification, text: string, now: Date): Promise<string> {
  if (standing.ticketId !== null) {
    const ticket = await lockTicket(trx, standing.ticketId);
    if (ticket && ticket.state === 'open') {
      await insertTicketMessage(trx, { id: ticket.id, messageCount: ticket.message_count }, platformMessage(text, now));
      return ticket.id;
    }
  }
  const ticket = await insertTicket(trx, {
    id: uuidV7(now),
    accountId: standing.ownerAccountId,
    category: 'hardware',
    jobId: null,
    hostAccountId: null,
    renterAccountId: null,
    now,
  });
  await insertTicketMessage(trx, { id: ticket.id, messageCount: 0n }, platformMessage(text, now));
  return ticket.id;
}

const platformMessage = (text: string, now: Date) => ({ authorAccountId: PLATFORM_OWNER, authorRole: 'admin' as const, text, now });

/** The run_selftest body from the configuration: a benchmark only when ARK_SELFTEST_IMAGE names one. */
export function selftestBody(deps: HostingDeps, trigger: RunSelftestBody['trigger']): RunSelftestBody {
  const { benchmarkImage, timeoutMs } = deps.settings.selftest;
  return { trigger, timeout_ms: timeoutMs, ...(benchmarkImage !== null ? { benchmark_image: benchmarkImage } : {}) };
}

/**
 * Inside enrollment's transaction: the machine's verification row, with its first self-test due at once. The self-test
 * worker asks for it at its next step (trigger `enrollment`), claimed like every other, and the agent finds it on its
 * first channel connection; the daily one is due a day after.
 */
export async function scheduleEnrollmentSelftest(trx: Tx, machineId: string, ownerAccountId: string, now: Date): Promise<void> {
  await insertMachineVerification(trx, { machineId, ownerAccountId, nextSelftestAt: now, now });
}

/**
 * POST /api/v1/hosts/machines/{id}/selftest: the owner or an admin asks for a self-test now (anyone else: 404). The
 * daily one moves a day past it.
 */
export async function queueSelftest(
  deps: HostingDeps,
  caller: MachineCaller,
  machineId: string,
  commit?: CommitHook<QueuedCommand>,
): Promise<QueuedCommand> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const machine = await machineForCaller(trx, caller, machineId);
      const next = new Date(now.getTime() + deps.settings.selftest.intervalMs);
      await insertMachineVerification(trx, { machineId, ownerAccountId: machine.owner_account_id, nextSelftestAt: next, now });
      await postponeSelftest(trx, machineId, next);
      return deps.outbox.enqueue(trx, { machineId, kind: 'run_selftest', body: selftestBody(deps, 'command'), now });
    },
    commit,
  );
}

/** Machines asked per worker step (each in its own short transaction). */
const SELFTEST_BATCH = 200;

/**
 * The self-test worker's step: each machine whose self-test is due (just enrolled, or a day after its last one) is
 * claimed by compare-and-set on its due time (so of several replicas only one asks) and gets a run_selftest in the
 * same transaction. Returns how many it asked.
 */
export async function queueDueSelftests(deps: HostingDeps): Promise<number> {
  const now = deps.clock.now();
  const due = await machinesDueSelftest(deps.store.db, now, SELFTEST_BATCH);
  let queued = 0;
  for (const machine of due) {
    const asked = await inTransactionWithRetry(deps.store, async (trx) => {
      if (!(await claimSelftest(trx, machine.machineId, machine.dueAt, new Date(now.getTime() + deps.settings.selftest.intervalMs))))
        return false;
      // Nothing received since enrollment: this is (still) the enrollment self-test.
      const trigger = machine.lastReceiptSeq === 0 ? 'enrollment' : 'daily';
      await deps.outbox.enqueue(trx, { machineId: machine.machineId, kind: 'run_selftest', body: selftestBody(deps, trigger), now });
      return true;
    });
    if (asked) queued++;
  }
  return queued;
}

/** What the public verification view is made of. */
export interface MachineVerificationRecord {
  machineId: string;
  publicKey: string;
  score: number | null;
  verifiedAt: string | null;
  unlisted: boolean;
  contradictions: Contradiction[];
  receipts: Array<{ receiptSeq: number; receipt: string; signature: string; score: number | null; createdAt: string }>;
}

/** GET /api/v1/machines/{id}/verification (public): null for an unknown machine. */
export async function machineVerification(deps: HostingDeps, machineId: string): Promise<MachineVerificationRecord | null> {
  const db = deps.store.db;
  const machine = await findMachine(db, machineId);
  if (!machine) return null;
  const standing = await findMachineVerification(db, machineId);
  const receipts = await latestHardwareReceipts(db, machineId, VERIFICATION_RECEIPTS_SHOWN);
  return {
    machineId,
    publicKey: machine.public_key,
    score: standing?.score ?? null,
    verifiedAt: standing?.verifiedAt ?? null,
    unlisted: standing?.unlisted ?? false,
    contradictions: standing?.contradictions ?? [],
    receipts: receipts.map((r) => ({
      receiptSeq: Number(r.receipt_seq),
      receipt: r.receipt,
      signature: r.signature,
      score: r.score,
      createdAt: r.created_at,
    })),
  };
}
