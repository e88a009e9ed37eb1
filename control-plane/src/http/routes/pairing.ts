import { randomUUID } from 'node:crypto';
import {
  CHANNEL_PATH,
  CHANNEL_PROTOCOL_VERSION,
  EnrollmentTokenCreated,
  EnrollmentTokenQuery,
  EnrollRequest,
  EnrollResponse,
  IdempotencyHeaders,
  type MachineManifest,
  PairingApproveRequest,
  PairingApproveResponse,
  PairingCreated,
  PairingCreateRequest,
  PairingLookupResponse,
  PairingPollRequest,
  PairingStatus,
  UserCodeRequest,
} from '@ark/shared';
import type { AppContext } from '../../app.js';
import { assertHostingAllowed } from '../../domain/pairing/hosting-rules.js';
import { PAIRING_MISS_LIMIT, PAIRING_POLL_INTERVAL_S, pairingStateAt, pairingSummary } from '../../domain/pairing/pairing.js';
import { secretMatches } from '../../domain/pairing/secrets.js';
import { formatUserCode, normalizeUserCode } from '../../domain/pairing/user-code.js';
import { seedOfferTerms } from '../../domain/offers/offer.js';
import { DomainError } from '../../errors.js';
import { loadControlPlaneIdentity } from '../../gateway/identity.js';
import { appendAudit } from '../../store/audit.js';
import { fromJson, toBool } from '../../store/db.js';
import { type ActingCredential, isHostingBlocked, readHostingFacts, turnHostingOn } from '../../store/hosts.js';
import { insertMachine, machineOfPairing } from '../../store/machines.js';
import { seedOffer } from '../../store/offers.js';
import {
  approvePairing,
  consumeEnrollmentToken,
  consumePairing,
  createPairing,
  findEnrollmentToken,
  findPairing,
  findPendingPairingByCode,
  issueEnrollmentToken,
  missSubjects,
  type PairingRow,
  recentMisses,
  recordMiss,
} from '../../store/pairings.js';
import type { Principal } from '../principal.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const MINUTE_MS = 60_000;
/** Pairings an address may start in ten minutes: an installer starts one, retries a few. */
const PAIRING_CREATES_PER_10_MIN = 20;
/** Polls an address may send a minute: several installers behind one NAT, each every 5 s. */
const PAIRING_POLLS_PER_MIN = 120;
const ENROLLMENTS_PER_MIN = 30;

function principalOf(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new DomainError('UNAUTHENTICATED');
  return request.principal;
}

const credentialOf = (principal: Principal): ActingCredential => ({ kind: principal.authMethod, id: principal.credentialId });

/** ws(s)://<public base>/api/v1/agents/channel?v=1: the channel is served where the API is. */
export function channelUrl(publicBaseUrl: string): string {
  const base = publicBaseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s.toLowerCase()}://`);
  return `${base}${CHANNEL_PATH}?v=${CHANNEL_PROTOCOL_VERSION}`;
}

export function registerPairingRoutes(app: TypedApp, ctx: AppContext): void {
  const { store, clock, config } = ctx;

  async function limit(key: string, max: number, windowMs: number): Promise<void> {
    if (!(await ctx.rateLimiter.consume(key, max, windowMs, clock.now()))) throw new DomainError('UNAVAILABLE');
  }

  /** The pending pairing a code names; a wrong (or malformed, or expired) code counts as a miss. Past 10 misses an hour: 429. */
  async function pendingPairingFor(userCode: string, principal: Principal, address: string): Promise<PairingRow> {
    const now = clock.now();
    const subjects = missSubjects(principal.accountId, address);
    if ((await recentMisses(store.db, subjects, now)) >= PAIRING_MISS_LIMIT) {
      throw new DomainError('UNAVAILABLE', 'Too many wrong pairing codes; wait an hour and retry.');
    }
    const canonical = normalizeUserCode(userCode);
    const pairing = canonical ? await findPendingPairingByCode(store.db, canonical, now) : undefined;
    if (!pairing) {
      await recordMiss(store.db, subjects, now);
      throw new DomainError('PAIRING_CODE_INVALID');
    }
    return pairing;
  }

  const summaryOf = (pairing: PairingRow) => pairingSummary(fromJson<MachineManifest>(pairing.manifest), new Date(pairing.created_at));

  app.post(
    '/api/v1/hosts/pairings',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Start pairing a machine (agent)',
        description: 'Unauthenticated; rate limited per source address. Answers a one-time user code and a poll secret.',
        body: PairingCreateRequest,
        response: withErrors({ 201: PairingCreated }),
      },
    },
    async (request, reply) => {
      await limit(`pairing-create:${request.ip}`, PAIRING_CREATES_PER_10_MIN, 10 * MINUTE_MS);
      const now = clock.now();
      const { row, pollSecret } = await createPairing(store.db, {
        manifest: request.body.manifest ?? null,
        sourceAddress: request.ip,
        now,
      });
      return reply.code(201).send({
        pairing_id: row.id,
        poll_secret: pollSecret,
        user_code: formatUserCode(row.user_code),
        verification_uri: config.pairingVerificationUri ?? `${config.publicBaseUrl}/pair`,
        expires_at: row.expires_at,
        interval_s: PAIRING_POLL_INTERVAL_S,
      });
    },
  );

  app.post(
    '/api/v1/hosts/pairings/lookup',
    {
      config: { auth: { session: true, verified: true } },
      schema: {
        summary: 'Look up a pairing code',
        description: 'Verified session. A wrong code counts as a miss; 10 misses an hour per account and per address answer 429.',
        body: UserCodeRequest,
        response: withErrors({ 200: PairingLookupResponse }, 403, 404),
      },
    },
    async (request) => {
      const pairing = await pendingPairingFor(request.body.user_code, principalOf(request), request.ip);
      return { summary: summaryOf(pairing), expires_at: pairing.expires_at };
    },
  );

  app.post(
    '/api/v1/hosts/pairings/approve',
    {
      config: { auth: { scope: 'host' }, idempotent: true },
      schema: {
        summary: 'Approve a pairing code',
        description:
          'Verified session, or API key with host scope. Hosting rules: verified email, host scope, admin block, new-host cap. ' +
          'First use turns hosting on. With go_live (default) the machine is listed, unverified, at its seeded offer on its first healthy heartbeat. Audited.',
        headers: IdempotencyHeaders,
        body: PairingApproveRequest,
        response: withErrors({ 200: PairingApproveResponse }, 403, 404, 409),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const goLive = request.body.go_live ?? true;
      const pairing = await pendingPairingFor(request.body.user_code, principal, request.ip);
      const now = clock.now();
      await store.db.transaction().execute(async (trx) => {
        // The profile upsert comes first: on Postgres it locks the host's row, so two approvals cannot both pass the cap.
        await turnHostingOn(trx, principal.accountId, now);
        const facts = await readHostingFacts(trx, { accountId: principal.accountId, credential: credentialOf(principal), now });
        assertHostingAllowed(facts, now, config.newHostMachineCap);
        const approved = await approvePairing(trx, {
          id: pairing.id,
          approverAccountId: principal.accountId,
          credential: credentialOf(principal),
          goLive,
          now,
        });
        if (!approved) throw new DomainError('PAIRING_CODE_INVALID');
        await appendAudit(trx, {
          at: now,
          actorAccountId: principal.accountId,
          action: 'hosting.pairing.approved',
          subject: pairing.id,
          detail: { go_live: goLive, auth_method: principal.authMethod, hostname: summaryOf(pairing).hostname },
        });
      });
      return { approved: true as const, go_live: goLive, summary: summaryOf(pairing) };
    },
  );

  app.post(
    '/api/v1/hosts/pairings/poll',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Poll a pairing (installer)',
        description:
          'Unauthenticated: the pairing_id and poll_secret are the credential. The one poll that sees approved gets a single-use enrollment ' +
          "token valid 10 minutes, after the approver's hosting rules are checked again; later polls see consumed and the machine's go-live state.",
        body: PairingPollRequest,
        response: withErrors({ 200: PairingStatus }, 403, 404),
      },
    },
    async (request): Promise<PairingStatus> => {
      await limit(`pairing-poll:${request.ip}`, PAIRING_POLLS_PER_MIN, MINUTE_MS);
      const pairing = await findPairing(store.db, request.body.pairing_id);
      if (!pairing || !secretMatches(request.body.poll_secret, pairing.poll_secret_hash)) throw new DomainError('NOT_FOUND');
      const now = clock.now();
      const goLive = toBool(pairing.go_live);
      const state = pairingStateAt(pairing.state, new Date(pairing.expires_at), now);
      if (state === 'pending' || state === 'expired')
        return { status: state, expires_at: pairing.expires_at, go_live: goLive, machine: null };
      if (state === 'approved') {
        const handedOut = await store.db.transaction().execute(async (trx) => {
          const approver = pairing.approver_account_id!;
          const credential: ActingCredential = { kind: pairing.approver_credential_kind!, id: pairing.approver_credential_id! };
          await turnHostingOn(trx, approver, now);
          const facts = await readHostingFacts(trx, { accountId: approver, credential, now, excludePairingId: pairing.id });
          assertHostingAllowed(facts, now, config.newHostMachineCap);
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
    },
  );

  app.post(
    '/api/v1/hosts/enrollment-tokens',
    {
      config: { auth: { scope: 'host' }, idempotent: true },
      schema: {
        summary: 'Create an enrollment token (hosts who skip pairing)',
        description:
          'Host scope. Same hosting rules as pairing approval; first use turns hosting on. The token is single use and valid 10 minutes. ' +
          "Query go_live (default true) lists the seeded offer on the machine's first healthy heartbeat.",
        headers: IdempotencyHeaders,
        querystring: EnrollmentTokenQuery,
        response: withErrors({ 201: EnrollmentTokenCreated }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const goLive = request.query.go_live ?? true;
      const now = clock.now();
      const issued = await store.db.transaction().execute(async (trx) => {
        await turnHostingOn(trx, principal.accountId, now);
        const facts = await readHostingFacts(trx, { accountId: principal.accountId, credential: credentialOf(principal), now });
        assertHostingAllowed(facts, now, config.newHostMachineCap);
        const token = await issueEnrollmentToken(trx, { accountId: principal.accountId, pairingId: null, goLive, now });
        await appendAudit(trx, {
          at: now,
          actorAccountId: principal.accountId,
          action: 'hosting.enrollment_token.created',
          subject: token.id,
          detail: { go_live: goLive, auth_method: principal.authMethod },
        });
        return token;
      });
      return reply.code(201).send({ enrollment_token: issued.token, expires_at: issued.expiresAt.toISOString() });
    },
  );

  app.post(
    '/api/v1/agents/enroll',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Enroll a machine (agent)',
        description:
          'Unauthenticated: the single-use enrollment token is the credential (ENROLLMENT_TOKEN_USED 409 on reuse, ENROLLMENT_TOKEN_INVALID 401 when ' +
          "unknown or expired). Answers the machine id, the control plane's public key to pin and the channel URL.",
        body: EnrollRequest,
        response: withErrors({ 201: EnrollResponse }, 403, 409),
      },
    },
    async (request, reply) => {
      await limit(`enroll:${request.ip}`, ENROLLMENTS_PER_MIN, MINUTE_MS);
      // Loaded before the transaction: on SQLite the transaction holds the only connection.
      const identity = await loadControlPlaneIdentity(store, config.secretKey);
      const now = clock.now();
      const machineId = randomUUID();
      await store.db.transaction().execute(async (trx) => {
        const consumed = await consumeEnrollmentToken(trx, { token: request.body.enrollment_token, machineId, now });
        if (!consumed.ok) throw new DomainError(consumed.reason);
        const token = consumed.row;
        // A block that landed after the token was handed out still stops the machine (the consumption rolls back).
        if (await isHostingBlocked(trx, token.account_id)) throw new DomainError('HOSTING_BLOCKED');
        const goLive = toBool(token.go_live);
        await insertMachine(trx, {
          id: machineId,
          ownerAccountId: token.account_id,
          publicKey: request.body.public_key,
          manifest: request.body.manifest,
          goLive,
          enrollmentTokenId: token.id,
          pairingId: token.pairing_id,
          now,
        });
        if (goLive) await seedOffer(trx, { machineId, terms: seedOfferTerms(config.seedRateMicroPerHour, now), now });
        await appendAudit(trx, {
          at: now,
          actorAccountId: token.account_id,
          action: 'hosting.machine.enrolled',
          subject: machineId,
          detail: { go_live: goLive, pairing_id: token.pairing_id, hostname: request.body.manifest.hostname },
        });
      });
      return reply
        .code(201)
        .send({ machine_id: machineId, control_plane_public_key: identity.publicKeyBase64, channel_url: channelUrl(config.publicBaseUrl) });
    },
  );
}
