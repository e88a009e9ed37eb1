import {
  CHANNEL_PATH,
  CHANNEL_PROTOCOL_VERSION,
  EnrollmentTokenCreated,
  EnrollmentTokenQuery,
  EnrollRequest,
  EnrollResponse,
  IdempotencyHeaders,
  PairingApproveRequest,
  PairingApproveResponse,
  PairingCreated,
  PairingCreateRequest,
  PairingLookupResponse,
  PairingPollRequest,
  PairingStatus,
  UserCodeRequest,
} from '@ark/shared';
import { DomainError } from '../../errors.js';
import type { ApprovedPairing } from '../../services/hosting/pairing.js';
import type { IssuedEnrollmentToken } from '../../services/hosting/enrollment.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const MINUTE_MS = 60_000;
/** Pairings an address may start in ten minutes: an installer starts one, retries a few. */
const PAIRING_CREATES_PER_10_MIN = 20;
/** Polls an address may send a minute: several installers behind one NAT, each every 5 s. */
const PAIRING_POLLS_PER_MIN = 120;
const ENROLLMENTS_PER_MIN = 30;

/** ws(s)://<public base>/api/v1/agents/channel?v=1: the channel is served where the API is. */
export function channelUrl(publicBaseUrl: string): string {
  const base = publicBaseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s.toLowerCase()}://`);
  return `${base}${CHANNEL_PATH}?v=${CHANNEL_PROTOCOL_VERSION}`;
}

export function registerPairingRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const pairing = ctx.services.pairing;

  async function limit(key: string, max: number, windowMs: number): Promise<void> {
    if (!(await ctx.rateLimiter.consume(key, max, windowMs, clock.now()))) throw new DomainError('UNAVAILABLE');
  }

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
      const started = await pairing.start({ manifest: request.body.manifest ?? null, sourceAddress: request.ip });
      return reply.code(201).send({
        pairing_id: started.pairingId,
        poll_secret: started.pollSecret,
        user_code: started.userCode,
        verification_uri: started.verificationUri,
        expires_at: started.expiresAt,
        interval_s: started.intervalS,
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
      const found = await pairing.lookup({ userCode: request.body.user_code, principal: principalOf(request), address: request.ip });
      return { summary: found.summary, expires_at: found.expiresAt };
    },
  );

  app.post(
    '/api/v1/hosts/pairings/approve',
    {
      config: { auth: { scope: 'host', orSession: true }, idempotent: true },
      schema: {
        summary: 'Approve a pairing code',
        description:
          'Verified session, or API key with host scope. Hosting rules: verified email, host scope, admin block, new-host cap. ' +
          "First use turns hosting on (and gives the account's sessions the host scope). With go_live (default) the machine is " +
          'listed, unverified, at its seeded offer on its first healthy heartbeat. Audited.',
        headers: IdempotencyHeaders,
        body: PairingApproveRequest,
        response: withErrors({ 200: PairingApproveResponse }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const toBody = (approved: ApprovedPairing) => ({ approved: true as const, go_live: approved.goLive, summary: approved.summary });
      const approved = await pairing.approve(
        { userCode: request.body.user_code, principal: principalOf(request), address: request.ip, goLive: request.body.go_live ?? true },
        answerInTransaction(request, reply, 200, toBody),
      );
      return toBody(approved);
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
      return pairing.poll({ pairingId: request.body.pairing_id, pollSecret: request.body.poll_secret });
    },
  );

  app.post(
    '/api/v1/hosts/enrollment-tokens',
    {
      config: { auth: { scope: 'host', orSession: true }, idempotent: true },
      schema: {
        summary: 'Create an enrollment token (hosts who skip pairing)',
        description:
          'Verified session, or API key with host scope. Same hosting rules as pairing approval; first use turns hosting on (and gives ' +
          "the account's sessions the host scope). The token is single use and valid 10 minutes. " +
          "Query go_live (default true) lists the seeded offer on the machine's first healthy heartbeat.",
        headers: IdempotencyHeaders,
        querystring: EnrollmentTokenQuery,
        response: withErrors({ 201: EnrollmentTokenCreated }, 403, 409),
      },
    },
    async (request, reply) => {
      const toBody = (issued: IssuedEnrollmentToken) => ({ enrollment_token: issued.token, expires_at: issued.expiresAt.toISOString() });
      const issued = await pairing.createEnrollmentToken(
        { principal: principalOf(request), goLive: request.query.go_live ?? true },
        answerInTransaction(request, reply, 201, toBody),
      );
      return reply.code(201).send(toBody(issued));
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
      // Loaded before the enrollment's transaction: on SQLite the transaction holds the only connection.
      const identity = await ctx.channelIdentity();
      const { enrollment_token, public_key, manifest } = request.body;
      const { machineId } = await pairing.enroll({ token: enrollment_token, publicKey: public_key, manifest });
      return reply
        .code(201)
        .send({ machine_id: machineId, control_plane_public_key: identity.publicKeyBase64, channel_url: channelUrl(config.publicBaseUrl) });
    },
  );
}
