import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Contradiction } from '../domain/machines/hardware-receipts.js';
import { type Executor, fromBool, fromJson, isPostgres, toBool, toJson, type Tx } from './db.js';
import type { HardwareReceiptsTable } from './tables/hardware-receipts.js';

// Hardware receipts and each machine's verification standing. Queries and row mapping only: the use case
// (services/hosting/hardware-receipts.ts) verifies, decides and tells.

export type HardwareReceiptRow = Selectable<HardwareReceiptsTable>;

export interface MachineVerification {
  machineId: string;
  ownerAccountId: string;
  lastReceiptSeq: number;
  score: number | null;
  verifiedAt: string | null;
  unlisted: boolean;
  contradictions: Contradiction[];
  unlistedSince: string | null;
  ticketId: string | null;
  nextSelftestAt: string;
}

type VerificationRow = Selectable<import('./tables/hardware-receipts.js').MachineVerificationTable>;

const verificationOf = (row: VerificationRow): MachineVerification => ({
  machineId: row.machine_id,
  ownerAccountId: row.owner_account_id,
  lastReceiptSeq: Number(row.last_receipt_seq),
  score: row.score,
  verifiedAt: row.verified_at,
  unlisted: toBool(row.unlisted),
  contradictions: fromJson<Contradiction[]>(row.contradictions) ?? [],
  unlistedSince: row.unlisted_since,
  ticketId: row.ticket_id,
  nextSelftestAt: row.next_selftest_at,
});

/** The standing row of a new machine: nothing measured, the next (daily) self-test a day after enrollment. */
export async function insertMachineVerification(
  db: Executor,
  input: { machineId: string; ownerAccountId: string; nextSelftestAt: Date; now: Date },
): Promise<void> {
  await db
    .insertInto('machine_verification')
    .values({
      machine_id: input.machineId,
      owner_account_id: input.ownerAccountId,
      last_receipt_seq: 0n,
      score: null,
      verified_at: null,
      unlisted: 0n,
      contradictions: '[]',
      unlisted_since: null,
      ticket_id: null,
      next_selftest_at: iso(input.nextSelftestAt),
      updated_at: iso(input.now),
    })
    .onConflict((oc) => oc.column('machine_id').doNothing())
    .execute();
}

export async function findMachineVerification(db: Executor, machineId: string): Promise<MachineVerification | undefined> {
  const row = await db.selectFrom('machine_verification').selectAll().where('machine_id', '=', machineId).executeTakeFirst();
  return row ? verificationOf(row) : undefined;
}

/** The standing row held until the transaction ends (Postgres; SQLite serialises writers). */
export async function lockMachineVerification(trx: Tx, machineId: string): Promise<MachineVerification | undefined> {
  const query = trx.selectFrom('machine_verification').selectAll().where('machine_id', '=', machineId);
  const row = await (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
  return row ? verificationOf(row) : undefined;
}

/** Writes the standing after a receipt (every field but the owner and the self-test schedule). */
export async function writeMachineVerification(trx: Tx, standing: MachineVerification, now: Date): Promise<void> {
  await trx
    .updateTable('machine_verification')
    .set({
      last_receipt_seq: BigInt(standing.lastReceiptSeq),
      score: standing.score,
      verified_at: standing.verifiedAt,
      unlisted: fromBool(standing.unlisted),
      contradictions: toJson(standing.contradictions),
      unlisted_since: standing.unlistedSince,
      ticket_id: standing.ticketId,
      updated_at: iso(now),
    })
    .where('machine_id', '=', standing.machineId)
    .execute();
}

export interface NewHardwareReceipt {
  machineId: string;
  receiptSeq: number;
  receipt: string;
  signature: string;
  trigger: string;
  ok: boolean;
  score: number | null;
  measuredAt: string;
  now: Date;
}

export async function insertHardwareReceipt(trx: Tx, receipt: NewHardwareReceipt): Promise<void> {
  await trx
    .insertInto('hardware_receipts')
    .values({
      machine_id: receipt.machineId,
      receipt_seq: BigInt(receipt.receiptSeq),
      receipt: receipt.receipt,
      signature: receipt.signature,
      trigger: receipt.trigger,
      ok: fromBool(receipt.ok),
      score: receipt.score,
      measured_at: receipt.measuredAt,
      created_at: iso(receipt.now),
    })
    .execute();
}

/** The machine's latest receipts, newest first. */
export async function latestHardwareReceipts(db: Executor, machineId: string, limit: number): Promise<HardwareReceiptRow[]> {
  return db
    .selectFrom('hardware_receipts')
    .selectAll()
    .where('machine_id', '=', machineId)
    .orderBy('receipt_seq', 'desc')
    .limit(limit)
    .execute();
}

/** Whether a contradicting receipt keeps the machine off new rentals. */
export async function isHardwareUnlisted(db: Executor, machineId: string): Promise<boolean> {
  const row = await db.selectFrom('machine_verification').select('unlisted').where('machine_id', '=', machineId).executeTakeFirst();
  return row !== undefined && toBool(row.unlisted);
}

/** Machines whose daily self-test is due, soonest first: {machine id, the due time the claim compares on}. */
export async function machinesDueSelftest(
  db: Executor,
  now: Date,
  limit: number,
): Promise<Array<{ machineId: string; dueAt: string; lastReceiptSeq: number }>> {
  const rows = await db
    .selectFrom('machine_verification')
    .select(['machine_id', 'next_selftest_at', 'last_receipt_seq'])
    .where('next_selftest_at', '<=', iso(now))
    .orderBy('next_selftest_at')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ machineId: row.machine_id, dueAt: row.next_selftest_at, lastReceiptSeq: Number(row.last_receipt_seq) }));
}

/**
 * Claims a due self-test by compare-and-set on the due time read: only one replica's worker moves it, and only that
 * one queues the command (in the same transaction). False: another replica claimed it first.
 */
export async function claimSelftest(trx: Tx, machineId: string, dueAt: string, next: Date): Promise<boolean> {
  const result = await trx
    .updateTable('machine_verification')
    .set({ next_selftest_at: iso(next) })
    .where('machine_id', '=', machineId)
    .where('next_selftest_at', '=', dueAt)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Pushes the next daily self-test out (one was just asked for by hand or at enrollment). */
export async function postponeSelftest(trx: Tx, machineId: string, next: Date): Promise<void> {
  await trx
    .updateTable('machine_verification')
    .set({ next_selftest_at: iso(next) })
    .where('machine_id', '=', machineId)
    .execute();
}
