import { randomUUID } from 'node:crypto';
import type { MachineManifest, PairingStatus, PairingSummary } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import { credentialOf, type Principal } from '../../domain/accounts/principal.js';
import { assertHostingAllowed } from '../../domain/pairing/hosting-rules.js';
import {
  missWindowStart,
  PAIRING_MISS_LIMIT,
  PAIRING_POLL_INTERVAL_S,
  pairingExpiry,
  pairingPurgeBefore,
  pairingStateAt,
  pairingSummary,
} from '../../domain/pairing/pairing.js';
import { mintPollSecret, secretMatches } from '../../domain/pairing/secrets.js';
import { formatUserCode, generateUserCode, normalizeUserCode } from '../../domain/pairing/user-code.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { type Executor, fromJson, type Store, toBool } from '../../store/db.js';
import { readHostingFacts, turnHostingOn } from '../../store/hosts.js';
import { machineOfPairing } from '../../store/machines.js';
import {
  approvePairing as approvePendingPairing,
  consumePairing,
  findEnrollmentToken,
  findPairing,
  findPendingPairingByCode,
  insertPairing,
  missSubjects,
  type PairingRow,
  purgePairings,
  recentMisses,
  recordMiss,
} from '../../store/pairings.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import {
  createEnrollmentToken,
  type EnrollmentDeps,
  enrollMachine,
  type IssuedEnrollmentToken,
  issueEnrollmentToken,
} from './enrollment.js';

// Pairing by one-time code (RFC 8628 device flow): the installer starts a pairing and polls it; the host looks the
// code up and approves it; the one poll that sees the approval gets a single-use enrollment token.

export interface PairingDeps {
  store: Store;
  clock: Clock;
  settings: Pick<Config, 'newHostMachineCap' | 'publicBaseUrl' | 'pairingVerificationUri'>;
}

export interface StartedPairing {
  pairingId: string;
  pollSecret: string;
  /** As shown to people: grouped, upper case. */
  userCode: string;
  verificationUri: string;
  expiresAt: string;
  intervalS: number;
}

/** A new pending pairing for an installer, with the code its host will approve. */
export async function startPairing(
  deps: PairingDeps,
  input: { manifest: MachineManifest | null; sourceAddress: string },
): Promise<StartedPairing> {
  const { settings } = deps;
  const now = deps.clock.now();
  const { row, pollSecret } = await newPendingPairing(deps.store.db, { ...input, now });
  return {
    pairingId: row.id,
    pollSecret,
    userCode: formatUserCode(row.user_code),
    verificationUri: settings.pairingVerificationUri ?? `${settings.publicBaseUrl}/pair`,
    expiresAt: row.expires_at,
    intervalS: PAIRING_POLL_INTERVAL_S,
  };
}

/** Draws a code and a poll secret and stores the pairing; a code already taken (rare: 20^8 codes) is drawn again. */
async function newPendingPairing(
  db: Executor,
  input: { manifest: MachineManifest | null; sourceAddress: string; now: Date },
): Promise<{ row: PairingRow; pollSecret: string }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { pollSecret, pollSecretHash } = mintPollSecret();
    const row = await insertPairing(db, { ...input, pollSecretHash, userCode: generateUserCode(), expiresAt: pairingExpiry(input.now) });
    if (row) return { row, pollSecret };
  }
  throw new Error('no free pairing code after 5 draws');
}

/** Worker step: forget misses past the window and pending pairings a day past their expiry. */
export function purgeStalePairings(db: Executor, now: Date): Promise<number> {
  return purgePairings(db, { missesUpTo: missWindowStart(now), pendingExpiredBefore: pairingPurgeBefore(now) });
}

const summaryOf = (pairing: PairingRow): PairingSummary =>
  pairingSummary(fromJson<MachineManifest>(pairing.manifest), new Date(pairing.created_at));

/**
 * The pending pairing a code names. A wrong (or malformed, or expired) code counts as a miss, committed on its own
 * so the refusal cannot roll it back; past PAIRING_MISS_LIMIT misses an hour (per account and per address): UNAVAILABLE.
 */
async function pendingPairingFor(deps: PairingDeps, userCode: string, principal: Principal, address: string): Promise<PairingRow> {
  const { db } = deps.store;
  const now = deps.clock.now();
  const subjects = missSubjects(principal.accountId, address);
  if ((await recentMisses(db, subjects, missWindowStart(now))) >= PAIRING_MISS_LIMIT) {
    throw new DomainError('UNAVAILABLE', 'Too many wrong pairing codes; wait an hour and retry.');
  }
  const canonical = normalizeUserCode(userCode);
  const pairing = canonical ? await findPendingPairingByCode(db, canonical, now) : undefined;
  if (!pairing) {
    await recordMiss(db, subjects, now);
    throw new DomainError('PAIRING_CODE_INVALID');
  }
  return pairing;
}

export interface PairingLookup {
  summary: PairingSummary;
  expiresAt: string;
}

/** What a code's machine says about itself, for its host to check before approving. */
export async function lookupPairing(
  deps: PairingDeps,
  input: { userCode: string; principal: Principal; address: string },
): Promise<PairingLookup> {
  const pairing = await pendingPairingFor(deps, input.userCode, input.principal, input.address);
  return { summary: summaryOf(pairing), expiresAt: pairing.expires_at };
}

export interface ApprovedPairing {
  goLive: boolean;
  summary: PairingSummary;
}

/**
 * Approves a code under the hosting rules (verified email, host scope, admin block, new-host cap); the first use
 * turns hosting on. Audited.
 */
export async function approvePairing(
  deps: PairingDeps,
  input: { userCode: string; principal: Principal; address: string; goLive: boolean },
  commit?: CommitHook<ApprovedPairing>,
): Promise<ApprovedPairing> {
  const { principal, goLive } = input;
  const pairing = await pendingPairingFor(deps, input.userCode, principal, input.address);
  const summary = summaryOf(pairing);
  const now = deps.clock.now();
  const credential = credentialOf(principal);
  return transact(
    deps.store,
    async (trx) => {
      // The profile upsert comes first: on Postgres it locks the host's row, so two approvals cannot both pass the cap.
      await turnHostingOn(trx, principal.accountId, now);
      const facts = await readHostingFacts(trx, { accountId: principal.accountId, credential, now });
      assertHostingAllowed(facts, now, deps.settings.newHostMachineCap);
      const approved = await approvePendingPairing(trx, {
        id: pairing.id,
        approverAccountId: principal.accountId,
        credential,
        goLive,
        now,
      });
      if (!approved) throw new DomainError('PAIRING_CODE_INVALID');
      await appendAudit(trx, {
        at: now,
        actorAccountId: principal.accountId,
        action: 'hosting.pairing.approved',
        subject: pairing.id,
        detail: { go_live: goLive, auth_method: principal.authMethod, hostname: summary.hostname },
      });
      return { goLive, summary };
    },
    commit,
  );
}

/**
 * The installer's poll; the pairing id and poll secret are its credential (NOT_FOUND otherwise). The one poll that
 * sees `approved` gets the enrollment token, after the approver's hosting rules are checked again; later polls see
 * `consumed` and the machine's go-live state.
 */
export async function pollPairing(deps: PairingDeps, input: { pairingId: string; pollSecret: string }): Promise<PairingStatus> {
  const { store } = deps;
  const pairing = await findPairing(store.db, input.pairingId);
  if (!pairing || !secretMatches(input.pollSecret, pairing.poll_secret_hash)) throw new DomainError('NOT_FOUND');
  const now = deps.clock.now();
  const goLive = toBool(pairing.go_live);
  const state = pairingStateAt(pairing.state, new Date(pairing.expires_at), now);
  if (state === 'pending' || state === 'expired') return { status: state, expires_at: pairing.expires_at, go_live: goLive, machine: null };
  if (state === 'approved') {
    const handedOut = await transact(store, async (trx) => {
      const approver = pairing.approver_account_id!;
      const credential = { kind: pairing.approver_credential_kind!, id: pairing.approver_credential_id! };
      await turnHostingOn(trx, approver, now);
      const facts = await readHostingFacts(trx, { accountId: approver, credential, now, excludePairingId: pairing.id });
      assertHostingAllowed(facts, now, deps.settings.newHostMachineCap);
      const tokenId = randomUUID();
      // The compare-and-set decides which poll hands the token out; the token row exists only if it wins.
      if (!(await consumePairing(trx, { id: pairing.id, enrollmentTokenId: tokenId, now }))) return null;
      return issueEnrollmentToken(trx, { id: tokenId, accountId: approver, pairingId: pairing.id, goLive, now });
    });
    if (handedOut) {
      return {
        status: 'approved',
        enrollment_token: handedOut.token,
        expires_at: handedOut.expiresAt.toISOString(),
        go_live: goLive,
        machine: null,
      };
    }
  }
  const current = (await findPairing(store.db, pairing.id))!;
  const token = current.enrollment_token_id ? await findEnrollmentToken(store.db, current.enrollment_token_id) : undefined;
  return {
    status: 'consumed',
    expires_at: token?.expires_at ?? current.expires_at,
    go_live: toBool(current.go_live),
    machine: await machineOfPairing(store.db, pairing.id),
  };
}

/** Pairing and enrollment, over one set of dependencies: the routes share them. */
export function buildPairingServices(deps: PairingDeps & EnrollmentDeps) {
  return {
    start: (input: { manifest: MachineManifest | null; sourceAddress: string }) => startPairing(deps, input),
    lookup: (input: { userCode: string; principal: Principal; address: string }) => lookupPairing(deps, input),
    approve: (input: { userCode: string; principal: Principal; address: string; goLive: boolean }, commit?: CommitHook<ApprovedPairing>) =>
      approvePairing(deps, input, commit),
    poll: (input: { pairingId: string; pollSecret: string }) => pollPairing(deps, input),
    createEnrollmentToken: (input: { principal: Principal; goLive: boolean }, commit?: CommitHook<IssuedEnrollmentToken>) =>
      createEnrollmentToken(deps, input, commit),
    enroll: (input: { token: string; publicKey: string; manifest: MachineManifest }) => enrollMachine(deps, input),
  };
}

export type PairingServices = ReturnType<typeof buildPairingServices>;
