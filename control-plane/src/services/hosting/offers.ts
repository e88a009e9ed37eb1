import type { OfferCommitRequest, TemplateFit } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { type ListedOffer, validateOfferCommit } from '../../domain/offers/offer.js';
import { machineDeviceVram } from '../../domain/templates/fit.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import type { Store } from '../../store/db.js';
import type { HeartbeatReader } from '../../store/heartbeats.js';
import { isHostingBlocked } from '../../store/hosts.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { findMachine } from '../../store/machines.js';
import { commitOfferVersion, listOffers, type OfferFilter } from '../../store/offers.js';
import { templateFitCalculator } from '../../store/templates.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';

// Offers: a host commits versioned future terms for its machine; renters list what is on offer.

export interface OfferDeps {
  store: Store;
  clock: Clock;
  /** Last-seen as this process knows it (heartbeats are written behind). */
  heartbeats: HeartbeatReader;
  /** Offer publication passes the paid-admission guard. */
  admissions: PaidAdmissionGuard;
}

export interface OfferCommitInput {
  principal: Principal;
  machineId: string;
  request: OfferCommitRequest;
  /** An acceptance authorization's id, presented while admission is paused. */
  acceptanceAuthorization?: string | null;
}

export interface CommittedOffer {
  machineId: string;
  offerId: string;
  version: bigint;
}

/**
 * Commits a new offer version of the host's own machine (NOT_FOUND for anyone else's), by compare-and-set on
 * `expected_version` (OFFER_VERSION_MISMATCH otherwise); HOSTING_BLOCKED under an admin block; ADMISSIONS_PAUSED
 * while admission is paused, unless an acceptance authorization is presented. Never alters a running price. Audited.
 */
export async function commitOffer(deps: OfferDeps, input: OfferCommitInput, commit?: CommitHook<CommittedOffer>): Promise<CommittedOffer> {
  const { store } = deps;
  const { principal, request } = input;
  const now = deps.clock.now();
  const machine = await findMachine(store.db, input.machineId);
  // Only the owner publishes; anyone else learns nothing about the machine.
  if (!machine || machine.owner_account_id !== principal.accountId) throw new DomainError('NOT_FOUND');
  const terms = validateOfferCommit(request, now);
  return transact(
    store,
    async (trx) => {
      if (await isHostingBlocked(trx, principal.accountId)) throw new DomainError('HOSTING_BLOCKED');
      await deps.admissions.admit(trx, {
        accountId: principal.accountId,
        kind: 'offer_publication',
        authorization: input.acceptanceAuthorization,
        reference: `machine:${machine.id}`,
      });
      const result = await commitOfferVersion(trx, {
        machineId: machine.id,
        expectedVersion: BigInt(request.expected_version),
        terms,
        accountId: principal.accountId,
        now,
      });
      await appendAudit(trx, {
        at: now,
        actorAccountId: principal.accountId,
        action: 'hosting.offer.committed',
        subject: result.offerId,
        detail: { machine_id: machine.id, offer_version: result.version.toString(), rate_micro_per_hour: request.rate_micro_per_hour },
      });
      return { machineId: machine.id, offerId: result.offerId, version: result.version };
    },
    commit,
  );
}

export interface OfferListing {
  /** Read at this time: liveness and availability are judged against it. */
  now: Date;
  offers: Array<ListedOffer & { fit?: TemplateFit }>;
}

/**
 * Listed offers of live machines, cheapest first, with last-seen as this process knows it and, when a template is
 * named, each machine's fit for it (TEMPLATE_NOT_FOUND when it is unknown or unpublished).
 */
export async function browseOffers(
  deps: OfferDeps,
  input: { filter: Omit<OfferFilter, 'now'>; templateId: string | null; after: KeysetPosition | null; fetch: number },
): Promise<OfferListing> {
  const { db } = deps.store;
  const now = deps.clock.now();
  const fitOf = input.templateId !== null ? await templateFitCalculator(db, input.templateId) : null;
  const rows = await listOffers(db, { ...input.filter, now }, input.after, input.fetch);
  return {
    now,
    offers: rows.map((row) => ({
      ...row,
      // A heartbeat buffered in this process is newer than the stored one.
      machine: { ...row.machine, lastHeartbeatAt: deps.heartbeats.lastHeartbeatAt(row.machineId, row.machine.lastHeartbeatAt) },
      ...(fitOf ? { fit: fitOf(machineDeviceVram(row.machine)) } : {}),
    })),
  };
}

/** Offer commits and the renters' offer list: the routes share them. */
export function buildOfferServices(deps: OfferDeps) {
  return {
    commit: (input: OfferCommitInput, commit?: CommitHook<CommittedOffer>) => commitOffer(deps, input, commit),
    browse: (input: { filter: Omit<OfferFilter, 'now'>; templateId: string | null; after: KeysetPosition | null; fetch: number }) =>
      browseOffers(deps, input),
  };
}

export type OfferServices = ReturnType<typeof buildOfferServices>;
