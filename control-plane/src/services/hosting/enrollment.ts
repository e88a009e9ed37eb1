import { randomUUID } from 'node:crypto';
import type { MachineManifest } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import { credentialOf, type Principal } from '../../domain/accounts/principal.js';
import { seedOfferTerms } from '../../domain/offers/offer.js';
import { assertHostingAllowed } from '../../domain/pairing/hosting-rules.js';
import { enrollmentTokenExpiry } from '../../domain/pairing/pairing.js';
import { hashSecret, mintEnrollmentToken } from '../../domain/pairing/secrets.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { type Executor, type Store, toBool, type Tx } from '../../store/db.js';
import { isHostingBlocked, readHostingFacts, turnHostingOn } from '../../store/hosts.js';
import { insertMachine } from '../../store/machines.js';
import { seedOffer } from '../../store/offers.js';
import { consumeEnrollmentToken, insertEnrollmentToken } from '../../store/pairings.js';
import { type CommitHook, transact } from '../../store/transaction.js';

// Enrollment: a single-use token (from a pairing's poll, or created directly by a host who skips pairing) turns
// into a machine.

export interface IssuedEnrollmentToken {
  id: string;
  /** Handed out once; the store keeps only its hash. */
  token: string;
  expiresAt: Date;
}

/** A single-use enrollment token, minted here and stored by its hash (a pairing's poll passes the id it recorded). */
export async function issueEnrollmentToken(
  db: Executor,
  input: { id?: string; accountId: string; pairingId: string | null; goLive: boolean; now: Date },
): Promise<IssuedEnrollmentToken> {
  const { token, tokenHash } = mintEnrollmentToken();
  const id = input.id ?? randomUUID();
  const expiresAt = enrollmentTokenExpiry(input.now);
  await insertEnrollmentToken(db, { ...input, id, tokenHash, expiresAt });
  return { id, token, expiresAt };
}

export interface EnrollmentDeps {
  store: Store;
  clock: Clock;
  settings: Pick<Config, 'newHostMachineCap' | 'seedRateMicroPerHour'>;
  /** Schedules the machine's first self-test inside the enrollment (hosting/hardware-receipts.ts); absent: none. */
  enrollmentSelftest?: (trx: Tx, machineId: string, ownerAccountId: string, now: Date) => Promise<void>;
}

/** An enrollment token for a host who skips pairing: the same hosting rules as an approval; audited. */
export function createEnrollmentToken(
  deps: EnrollmentDeps,
  input: { principal: Principal; goLive: boolean },
  commit?: CommitHook<IssuedEnrollmentToken>,
): Promise<IssuedEnrollmentToken> {
  const { principal, goLive } = input;
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      await turnHostingOn(trx, principal.accountId, now);
      const facts = await readHostingFacts(trx, { accountId: principal.accountId, credential: credentialOf(principal), now });
      assertHostingAllowed(facts, now, deps.settings.newHostMachineCap);
      const token = await issueEnrollmentToken(trx, { accountId: principal.accountId, pairingId: null, goLive, now });
      await appendAudit(trx, {
        at: now,
        actorAccountId: principal.accountId,
        action: 'hosting.enrollment_token.created',
        subject: token.id,
        detail: { go_live: goLive, auth_method: principal.authMethod },
      });
      return token;
    },
    commit,
  );
}

/**
 * Enrolls a machine with a token, used once (ENROLLMENT_TOKEN_USED on reuse, ENROLLMENT_TOKEN_INVALID when unknown
 * or expired). With go-live the machine gets its seeded offer, listed at its first healthy heartbeat. Audited.
 */
export async function enrollMachine(
  deps: EnrollmentDeps,
  input: { token: string; publicKey: string; manifest: MachineManifest },
): Promise<{ machineId: string }> {
  const now = deps.clock.now();
  const machineId = randomUUID();
  await transact(deps.store, async (trx) => {
    const consumed = await consumeEnrollmentToken(trx, { tokenHash: hashSecret(input.token), machineId, now });
    if (!consumed.ok) throw new DomainError(consumed.reason);
    const token = consumed.row;
    // A block that landed after the token was handed out still stops the machine (the consumption rolls back).
    if (await isHostingBlocked(trx, token.account_id)) throw new DomainError('HOSTING_BLOCKED');
    const goLive = toBool(token.go_live);
    await insertMachine(trx, {
      id: machineId,
      ownerAccountId: token.account_id,
      publicKey: input.publicKey,
      manifest: input.manifest,
      goLive,
      enrollmentTokenId: token.id,
      pairingId: token.pairing_id,
      now,
    });
    if (goLive) await seedOffer(trx, { machineId, terms: seedOfferTerms(deps.settings.seedRateMicroPerHour, now), now });
    // Its first self-test is due at once: the self-test worker asks for it (workers/selftest.ts).
    await deps.enrollmentSelftest?.(trx, machineId, token.account_id, now);
    await appendAudit(trx, {
      at: now,
      actorAccountId: token.account_id,
      action: 'hosting.machine.enrolled',
      subject: machineId,
      detail: { go_live: goLive, pairing_id: token.pairing_id, hostname: input.manifest.hostname },
    });
  });
  return { machineId };
}
