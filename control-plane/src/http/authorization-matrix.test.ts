// The authorization matrix (issue 7): every operation of /openapi.json, times every kind of caller: anonymous, two
// renters, two hosts, an admin session (TOTP step-up), an admin's API key, keys with the wrong scope, an expired key
// and a revoked key. Each cell is either allowed (the handler's own answer, listed per operation) or refused exactly
// as the contract says: 401 UNAUTHENTICATED without a valid credential, 403 ADMIN_SESSION_REQUIRED, FORBIDDEN
// (session only), SCOPE_REQUIRED or STEP_UP_REQUIRED, and 404 NOT_FOUND for another account's resource, never 403
// (telemetry of a non-owned machine included). For operations on a resource, the answer for a resource that does
// not exist must be the same as the refusal: which ids exist never leaks. Every error answer is the exact envelope.
//
// The expected cells come from the table below, written from the contract, not from the routes' own config: a
// route whose declared requirement drifts from it fails here. An operation missing from the table fails too.
//
// Money out (issue 22): a withdrawal needs the renter scope and a payout the host scope, checked on the balance the
// body names, after the step-up; a person's API key is never stepped up (a password or TOTP code steps up sessions
// only), so the stepped-up keys here are an agent's, stepped up by its sign-in wallet: renter only, host only, both.
// A session carries the host scope only once its account hosts (renterB's session: never, until it takes an
// enrollment token near the end), yet may take that token: the routes that start hosting take any session.
import { randomBytes, randomUUID } from 'node:crypto';
import { ErrorEnvelope } from '@ark/shared';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, seedAgent, type TestApp } from '../testing/app.js';
import { enrollDirect, machinePublicKey, randomAddress, sampleManifest } from '../testing/hosting.js';
import { agentHeartbeat, customImage, fund, reserveJob, sshPublicKey } from '../testing/renting.js';
import { DIALECTS } from '../testing/stores.js';

type Json = Record<string, any>;
type Scope = 'renter' | 'host';
type Account = 'renterA' | 'renterB' | 'hostA' | 'hostB' | 'admin' | 'agent';
const PRINCIPALS = [
  'anonymous',
  'renterA',
  'renterB',
  'renterBSession',
  'hostA',
  'hostB',
  'adminSession',
  'adminKey',
  'renterKeyOfHostA',
  'hostKeyOfRenterA',
  'agentRenterKey',
  'agentHostKey',
  'agentBothKey',
  'expiredKey',
  'revokedKey',
] as const;
type Who = (typeof PRINCIPALS)[number];

/** What each caller is: null for those with no valid credential. */
interface Facts {
  account: Account;
  session: boolean;
  /** An interactive admin session (an admin's API key is not one). */
  admin: boolean;
  scopes: Scope[];
  /** A fresh step-up on this credential that counts (a person's key has none: only sessions and agents' wallets). */
  stepUp: boolean;
  /** Hosting needs a verified email; an agent has none. */
  emailVerified: boolean;
}
const BOTH: Scope[] = ['renter', 'host'];
const person = { admin: false, emailVerified: true } as const;
const agent = { account: 'agent', session: false, admin: false, stepUp: true, emailVerified: false } as const;
const FACTS: Record<Who, Facts | null> = {
  anonymous: null,
  // Renter A turned hosting on (beforeAll): its session carries both scopes.
  renterA: { ...person, account: 'renterA', session: true, scopes: BOTH, stepUp: true },
  // People's keys: seeded with a password step-up, which a key's credential never counts.
  renterB: { ...person, account: 'renterB', session: false, scopes: ['renter'], stepUp: false },
  // Renter B never hosts (until the enrollment-token row, near the end): its session is renter only.
  renterBSession: { ...person, account: 'renterB', session: true, scopes: ['renter'], stepUp: true },
  hostA: { ...person, account: 'hostA', session: false, scopes: ['host'], stepUp: false },
  hostB: { ...person, account: 'hostB', session: true, scopes: BOTH, stepUp: true },
  adminSession: { account: 'admin', session: true, admin: true, scopes: BOTH, stepUp: true, emailVerified: true },
  adminKey: { ...person, account: 'admin', session: false, scopes: BOTH, stepUp: false },
  // Keys made over the API: one scope, never stepped up.
  renterKeyOfHostA: { ...person, account: 'hostA', session: false, scopes: ['renter'], stepUp: false },
  hostKeyOfRenterA: { ...person, account: 'renterA', session: false, scopes: ['host'], stepUp: false },
  // An agent's keys, each stepped up by its sign-in wallet.
  agentRenterKey: { ...agent, scopes: ['renter'] },
  agentHostKey: { ...agent, scopes: ['host'] },
  agentBothKey: { ...agent, scopes: BOTH },
  expiredKey: null,
  revokedKey: null,
};

/** Built per cell: the ids of the fixtures, and `id` for the operation's path resource. */
interface Cell {
  who: Who;
  id: string;
  machineId: string;
  jobId: string;
  offerId: string;
  now: Date;
}
type Request = Pick<InjectOptions, 'method' | 'url' | 'query' | 'payload' | 'headers'>;

interface Rule {
  need:
    | 'public'
    | {
        scope?: Scope;
        /** With scope: any session passes instead (the routes that start hosting). */
        orSession?: true;
        admin?: true;
        session?: true;
        stepUp?: true;
        /** The scope the body's balance calls for, checked by the handler after the step-up. */
        bodyScope?: Scope;
        /** The hosting rules: a verified email (checked by the use case, after the scope). */
        hosting?: true;
      };
  /** The path resource's owner, and whether an admin session may act on it too. */
  owner?: { account: Account; admin: boolean; resource: 'machine' | 'job' | 'fresh' };
  /** For `fresh` resources: makes one owned by the owner for each cell. */
  fresh?: () => Promise<string>;
  request: (cell: Cell) => Request;
  /** Statuses an allowed caller gets (the handler's answer to this well-formed request). */
  ok: number[];
}

const REFUSALS = new Set([
  'UNAUTHENTICATED',
  'ADMIN_SESSION_REQUIRED',
  'FORBIDDEN',
  'SCOPE_REQUIRED',
  'STEP_UP_REQUIRED',
  'EMAIL_NOT_VERIFIED',
]);
type Expected = { allowed: true } | { allowed: false; status: number; code: string };
const ALLOWED: Expected = { allowed: true };
const refused = (status: number, code: string): Expected => ({ allowed: false, status, code });

/** The contract's decision for one cell; the checks run in the order the plumbing runs them. */
function expected(rule: Rule, who: Who): Expected {
  if (rule.need === 'public') return ALLOWED;
  const p = FACTS[who];
  if (!p) return refused(401, 'UNAUTHENTICATED');
  if (rule.need.admin && !p.admin) return refused(403, 'ADMIN_SESSION_REQUIRED');
  if (rule.need.session && !p.session) return refused(403, 'FORBIDDEN');
  // A machine's owner is judged before the key's scope: a stranger gets 404 whatever its scopes (http/owner-first.ts).
  const stranger = rule.owner !== undefined && p.account !== rule.owner.account && !p.admin;
  if (rule.need.scope && !p.scopes.includes(rule.need.scope) && !(rule.need.orSession && p.session))
    return rule.owner?.resource === 'machine' && stranger ? refused(404, 'NOT_FOUND') : refused(403, 'SCOPE_REQUIRED');
  if (rule.need.stepUp && !p.stepUp) return refused(403, 'STEP_UP_REQUIRED');
  if (rule.need.bodyScope && !p.scopes.includes(rule.need.bodyScope)) return refused(403, 'SCOPE_REQUIRED');
  if (rule.need.hosting && !p.emailVerified) return refused(403, 'EMAIL_NOT_VERIFIED');
  if (rule.owner && p.account !== rule.owner.account && !(rule.owner.admin && p.admin)) return refused(404, 'NOT_FOUND');
  return ALLOWED;
}

const ajv = new Ajv.default({ strict: false });
addFormats.default(ajv);
const isEnvelope = ajv.compile(ErrorEnvelope);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A public address as an IP literal: registering it resolves nothing. */
const WEBHOOK_URL = 'https://93.184.215.14/ark-hook';
const evmAddress = () => `0x${randomBytes(20).toString('hex')}`;
const later = (now: Date, ms: number) => new Date(now.getTime() + ms).toISOString();

describe.each(DIALECTS)('authorization matrix on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let doc: Json;
  const tokens = {} as Record<Who, string | null>;
  const seeded = {} as Record<Account, SeededAccount>;
  let fixtures: Omit<Cell, 'who' | 'id' | 'now'>;

  /** A request as `who`, from a fresh address (per-address limits stay out of the way), with an Idempotency-Key when the operation takes one. */
  async function send(who: Who, request: Request, idempotent: boolean) {
    const token = tokens[who];
    return t.app.inject({
      ...request,
      remoteAddress: randomAddress(),
      headers: {
        ...(request.headers as Record<string, string> | undefined),
        ...(token ? bearer(token) : {}),
        ...(idempotent ? { 'idempotency-key': randomUUID() } : {}),
      },
    } as InjectOptions);
  }

  async function postAs(token: string, url: string, payload: Json) {
    const res = await t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'idempotency-key': randomUUID() }, payload });
    if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.json() as Json;
  }
  const newKeyOf = (account: Account, scopes: Scope[], expiresAt?: string) =>
    postAs(seeded[account].sessionToken, '/api/v1/account/api-keys', {
      label: 'matrix',
      scopes,
      ...(expiresAt ? { expires_at: expiresAt } : {}),
    });

  const freshTicket = async () =>
    (await postAs(seeded.renterA.sessionToken, '/api/v1/tickets', { category: 'matrix', text: 'help' })).ticket_id;
  let endpointId: string | null = null;
  /** One endpoint of renterA's for the operations that leave it in place (an account holds at most 20). */
  const theEndpoint = async () => {
    endpointId ??= (await postAs(seeded.renterA.sessionToken, '/api/v1/webhooks', { url: WEBHOOK_URL, event_types: ['job.state_changed'] }))
      .id as string;
    return endpointId;
  };

  // The table: every operation, in the order it runs (what ends a session or the account last).
  const RULES: Record<string, Rule> = {
    'POST /api/v1/hosts/pairings': { need: 'public', request: () => ({ payload: {} }), ok: [201] },
    'POST /api/v1/hosts/pairings/lookup': { need: { session: true }, request: () => ({ payload: { user_code: 'ZZZZ-ZZZZ' } }), ok: [404] },
    'POST /api/v1/hosts/pairings/approve': {
      need: { scope: 'host', orSession: true },
      request: () => ({ payload: { user_code: 'ZZZZ-ZZZZ' } }),
      ok: [404],
    },
    'POST /api/v1/hosts/pairings/poll': {
      need: 'public',
      request: () => ({ payload: { pairing_id: randomUUID(), poll_secret: 'not-the-secret' } }),
      ok: [404],
    },
    'POST /api/v1/agents/enroll': {
      need: 'public',
      request: () => ({
        payload: {
          enrollment_token: `arkenr_${randomBytes(32).toString('base64url')}`,
          public_key: machinePublicKey(),
          manifest: sampleManifest(),
        },
      }),
      ok: [401],
    },
    'GET /api/v1/hosts/machines': { need: { scope: 'host' }, request: () => ({}), ok: [200] },
    'GET /api/v1/hosts/machines/{id}': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: true, resource: 'machine' },
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/hosts/machines/{id}/go-live': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: false, resource: 'machine' },
      request: () => ({ payload: { go_live: true } }),
      ok: [200],
    },
    'POST /api/v1/hosts/machines/{id}/cpu-listing': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: false, resource: 'machine' },
      request: () => ({ payload: { cpu_listing: true } }),
      ok: [200],
    },
    'POST /api/v1/hosts/machines/{id}/offer': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: false, resource: 'machine' },
      // Well-formed terms on a stale version: the owner gets as far as the compare-and-set.
      request: (c) => ({
        payload: {
          rate_micro_per_hour: '1000000',
          included_quotas: { included_disk_gib: 10, included_egress_gib: 10 },
          available_from: later(c.now, 3600_000),
          available_until: later(c.now, 30 * 86400_000),
          expected_version: '999',
        },
      }),
      ok: [409],
    },
    'GET /api/v1/offers': { need: { scope: 'renter' }, request: () => ({}), ok: [200] },
    'GET /api/v1/hosts/market': { need: { scope: 'host' }, request: () => ({ query: { window: '7d' } }), ok: [200] },
    'GET /api/v1/hosts/machines/{id}/telemetry': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: true, resource: 'machine' },
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/hosts/machines/{id}/nettest': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: true, resource: 'machine' },
      request: () => ({}),
      ok: [202],
    },
    'POST /api/v1/hosts/machines/{id}/selftest': {
      need: { scope: 'host' },
      owner: { account: 'hostA', admin: true, resource: 'machine' },
      request: () => ({}),
      ok: [202],
    },
    'GET /api/v1/machines/{id}/verification': {
      need: 'public',
      request: (c) => ({ url: `/api/v1/machines/${c.machineId}/verification` }),
      ok: [200],
    },
    'GET /api/v1/nettest/ping': { need: 'public', request: () => ({}), ok: [200] },
    'GET /api/v1/nettest/download': { need: 'public', request: () => ({ query: { bytes: '16' } }), ok: [200] },
    'POST /api/v1/nettest/upload': {
      need: 'public',
      request: () => ({ headers: { 'content-type': 'application/octet-stream' }, payload: Buffer.from('0123456789') }),
      ok: [200],
    },
    'GET /api/v1/billing/balance': { need: { scope: 'renter' }, request: () => ({}), ok: [200] },
    // 503 while the operator has not configured deposit addresses (as in these tests).
    'GET /api/v1/billing/deposit-address': { need: { scope: 'renter' }, request: () => ({}), ok: [200, 503] },
    // 404 while the operator has not enabled x402 (as in these tests): after authentication, to renters only.
    'POST /api/v1/billing/x402/top-up': { need: { scope: 'renter' }, request: () => ({ query: { amount_micro: '1000000' } }), ok: [404] },
    // Sign-up and sign-in with a password too short to hash: admitted, refused by the schema (hashing is slow on purpose).
    'POST /api/v1/accounts': {
      need: 'public',
      request: () => ({ payload: { email: `matrix-${randomUUID()}@example.test`, password: 'short' } }),
      ok: [422],
    },
    'POST /api/v1/account/email-verification': { need: 'public', request: () => ({ payload: { token: 'not-a-token' } }), ok: [422] },
    'POST /api/v1/account/email-verification/resend': { need: {}, request: () => ({}), ok: [200] },
    'POST /api/v1/auth/sessions': { need: 'public', request: () => ({ payload: { email: 'someone@example.test' } }), ok: [422] },
    'GET /api/v1/account': { need: {}, request: () => ({}), ok: [200] },
    // No sign-in provider is configured in these tests: 404 OAUTH_PROVIDER_NOT_CONFIGURED once admitted.
    'GET /api/v1/auth/oauth/{provider}/start': { need: 'public', request: () => ({ url: '/api/v1/auth/oauth/github/start' }), ok: [404] },
    'GET /api/v1/auth/oauth/{provider}/callback': {
      need: 'public',
      request: () => ({ url: '/api/v1/auth/oauth/google/callback?state=unknown&code=unknown' }),
      ok: [404],
    },
    'POST /api/v1/account/step-up/oauth/{provider}': {
      need: { session: true },
      request: () => ({ url: '/api/v1/account/step-up/oauth/github' }),
      ok: [404],
    },
    // An empty proof: refused by the schema once the caller is admitted, so no step-up is spent.
    'POST /api/v1/account/step-up': { need: {}, request: () => ({ payload: {} }), ok: [422] },
    // A person has no sign-in wallet to challenge (409); the agent's wallet is challenged.
    'POST /api/v1/account/step-up/challenge': { need: {}, request: () => ({}), ok: [200, 409] },
    // No primary network is configured here, so the wallet's EOA check cannot run: 503, before any challenge is stored.
    'POST /api/v1/agents/accounts/challenge': { need: 'public', request: () => ({ payload: { address: evmAddress() } }), ok: [503] },
    'POST /api/v1/agents/accounts': { need: 'public', request: () => ({ payload: {} }), ok: [422] },
    'POST /api/v1/account/totp': { need: { session: true, stepUp: true }, request: () => ({}), ok: [200, 409] },
    'POST /api/v1/account/totp/confirm': { need: { session: true }, request: () => ({ payload: { totp_code: '000000' } }), ok: [409, 422] },
    'POST /api/v1/account/api-keys': {
      need: { stepUp: true },
      // Within the caller's own scopes: a key never mints a broader key (accounts.test.ts covers the refusal).
      request: (cell) => ({ payload: { label: 'matrix', scopes: [FACTS[cell.who]?.scopes[0] ?? 'renter'] } }),
      ok: [201],
    },
    'GET /api/v1/account/api-keys': { need: {}, request: () => ({}), ok: [200] },
    'DELETE /api/v1/account/api-keys/{id}': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: async () => (await newKeyOf('renterA', ['renter'])).api_key_id,
      request: () => ({}),
      ok: [200],
    },
    // The hub token pulls models for the account's rentals: renter business.
    'POST /api/v1/account/integrations/{provider}': {
      need: { scope: 'renter', stepUp: true },
      request: () => ({ url: '/api/v1/account/integrations/model-hub', payload: { token: 'hub-token-for-the-matrix' } }),
      ok: [201],
    },
    'GET /api/v1/admin/audit': { need: { admin: true }, request: () => ({}), ok: [200] },
    // Admissions and operator controls (issue 12). The matrix resumes (never pauses): later cells still reserve.
    'POST /api/v1/admin/admissions': {
      need: { admin: true, stepUp: true },
      request: () => ({ payload: { enabled: true, reason: 'the matrix' } }),
      ok: [202],
    },
    'GET /api/v1/admin/admissions': { need: { admin: true }, request: () => ({}), ok: [200] },
    'POST /api/v1/admin/acceptance-authorizations': {
      need: { admin: true, stepUp: true },
      request: (cell) => ({
        payload: { account_id: seeded.renterA.accountId, kind: 'reservation', expires_at: later(cell.now, 600_000), reason: 'the matrix' },
      }),
      ok: [201],
    },
    // No SMTP server is configured here: the check answers 200 {ok: false, detail} to whoever may ask.
    'POST /api/v1/admin/settings/test': { need: { admin: true }, request: () => ({ payload: { subsystem: 'mail' } }), ok: [200] },
    'GET /api/v1/admin/ledger/summary': { need: { admin: true }, request: () => ({}), ok: [200] },
    'GET /api/v1/admin/fleet': { need: { admin: true }, request: () => ({}), ok: [200] },
    'POST /api/v1/account/ssh-keys': { need: {}, request: () => ({ payload: { public_key: sshPublicKey() } }), ok: [201] },
    'GET /api/v1/account/ssh-keys': { need: {}, request: () => ({}), ok: [200] },
    'DELETE /api/v1/account/ssh-keys/{id}': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: async () => (await postAs(seeded.renterA.sessionToken, '/api/v1/account/ssh-keys', { public_key: sshPublicKey() })).id,
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/withdrawal-addresses': { need: { stepUp: true }, request: () => ({ payload: { address: evmAddress() } }), ok: [201] },
    'GET /api/v1/withdrawal-addresses': { need: {}, request: () => ({}), ok: [200] },
    'DELETE /api/v1/withdrawal-addresses/{id}': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: async () => (await postAs(seeded.renterA.sessionToken, '/api/v1/withdrawal-addresses', { address: evmAddress() })).id,
      request: () => ({}),
      ok: [200],
    },
    // No primary network is configured here: withdrawals answer 503 UNAVAILABLE (retryable) to whoever may ask. The
    // balance drawn names the scope: available (a withdrawal) renter, payable (a payout) host.
    'POST /api/v1/withdrawals': {
      need: { stepUp: true, bodyScope: 'renter' },
      request: () => ({ payload: { balance: 'available', amount_micro: '1000000', withdrawal_address_id: randomUUID() } }),
      ok: [503],
    },
    'POST /api/v1/withdrawals #payout': {
      need: { stepUp: true, bodyScope: 'host' },
      request: () => ({ payload: { balance: 'payable', amount_micro: '1000000', withdrawal_address_id: randomUUID() } }),
      ok: [503],
    },
    'GET /api/v1/withdrawals': { need: {}, request: () => ({}), ok: [200] },
    'GET /api/v1/withdrawals/{id}': { need: {}, request: () => ({ url: `/api/v1/withdrawals/${randomUUID()}` }), ok: [404] },
    'GET /api/v1/hosts/earnings': { need: { scope: 'host' }, request: () => ({}), ok: [200] },
    'POST /api/v1/admin/withdrawals/{id}/review': {
      need: { admin: true, stepUp: true },
      request: () => ({ url: `/api/v1/admin/withdrawals/${randomUUID()}/review`, payload: { decision: 'approve', reason: 'the matrix' } }),
      ok: [404],
    },
    'GET /api/v1/admin/withdrawals': { need: { admin: true }, request: () => ({}), ok: [200] },
    // Held deposits (issue 22): an unknown deposit is 404 to an admin who may act.
    'GET /api/v1/admin/deposits': { need: { admin: true }, request: () => ({}), ok: [200] },
    'POST /api/v1/admin/deposits/{id}/credit': {
      need: { admin: true, stepUp: true },
      request: () => ({ url: `/api/v1/admin/deposits/${randomUUID()}/credit`, payload: { reason: 'the matrix' } }),
      ok: [404],
    },
    'POST /api/v1/admin/deposits/{id}/refund': {
      need: { admin: true, stepUp: true },
      request: () => ({ url: `/api/v1/admin/deposits/${randomUUID()}/refund`, payload: { reason: 'the matrix' } }),
      ok: [404],
    },
    // Support tickets: a party reads a case (anyone else 404); writing, closing and reopening are decided by the
    // handler on the case's parties (201/200, or 403 TICKET_FORBIDDEN as contract part 4 says).
    'POST /api/v1/tickets': { need: {}, request: () => ({ payload: { category: 'matrix', text: 'hello' } }), ok: [201] },
    'GET /api/v1/tickets': { need: {}, request: () => ({}), ok: [200] },
    'GET /api/v1/tickets/{id}': {
      need: {},
      owner: { account: 'renterA', admin: true, resource: 'fresh' },
      fresh: freshTicket,
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/tickets/{id}/messages': {
      need: {},
      fresh: freshTicket,
      request: () => ({ payload: { text: 'matrix' } }),
      ok: [201, 403],
    },
    'POST /api/v1/tickets/{id}/close': { need: {}, fresh: freshTicket, request: () => ({}), ok: [200, 403] },
    'POST /api/v1/tickets/{id}/reopen': { need: {}, fresh: freshTicket, request: () => ({}), ok: [200, 403] },
    'GET /api/v1/admin/tickets': { need: { admin: true }, request: () => ({}), ok: [200] },
    // Webhooks: an account's own endpoints (an IP literal: no name is resolved; nothing is sent from here).
    'POST /api/v1/webhooks': {
      need: {},
      request: () => ({ payload: { url: WEBHOOK_URL, event_types: ['job.state_changed'] } }),
      ok: [201],
    },
    'GET /api/v1/webhooks': { need: {}, request: () => ({}), ok: [200] },
    'POST /api/v1/webhooks/{id}/rotate-secret': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: theEndpoint,
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/webhooks/{id}/test': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: theEndpoint,
      request: () => ({}),
      ok: [202],
    },
    'GET /api/v1/webhooks/{id}/deliveries': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: theEndpoint,
      request: () => ({}),
      ok: [200],
    },
    'POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/replay': {
      need: {},
      request: () => ({ url: `/api/v1/webhooks/${randomUUID()}/deliveries/${randomUUID()}/replay` }),
      ok: [404],
    },
    'DELETE /api/v1/webhooks/{id}': {
      need: {},
      owner: { account: 'renterA', admin: false, resource: 'fresh' },
      fresh: async () =>
        (await postAs(seeded.renterA.sessionToken, '/api/v1/webhooks', { url: WEBHOOK_URL, event_types: ['job.state_changed'] })).id,
      request: () => ({}),
      ok: [200],
    },
    'GET /api/v1/templates': { need: 'public', request: () => ({}), ok: [200] },
    'GET /api/v1/templates/{id}': { need: 'public', request: () => ({ url: `/api/v1/templates/${randomUUID()}` }), ok: [404] },
    'POST /api/v1/admin/templates/{id}/qualifications': {
      need: { admin: true },
      request: (c) => ({
        url: `/api/v1/admin/templates/${randomUUID()}/qualifications`,
        payload: { machine_id: c.machineId, reason: 'matrix' },
      }),
      ok: [404],
    },
    'POST /api/v1/quotes': {
      need: { scope: 'renter' },
      request: (c) => ({ payload: { offer_id: c.offerId, gpu_count: 1, duration_limit_s: 3600, image_digest: customImage() } }),
      ok: [201, 409],
    },
    'POST /api/v1/jobs': {
      need: { scope: 'renter' },
      request: () => ({ payload: { quote_id: randomUUID(), ssh_public_keys: [sshPublicKey()] } }),
      ok: [404],
    },
    'GET /api/v1/jobs': { need: { scope: 'renter' }, request: () => ({}), ok: [200] },
    'GET /api/v1/account/spend-cap': { need: { scope: 'renter' }, request: () => ({}), ok: [200] },
    // Back to the operator's default, where every account already is: not a raise, so no step-up (spend-cap.test.ts
    // covers the raise); the matrix's later reservations keep their room.
    'PUT /api/v1/account/spend-cap': { need: { scope: 'renter' }, request: () => ({ payload: { cap_micro_per_hour: null } }), ok: [200] },
    'GET /api/v1/jobs/{id}': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: true, resource: 'job' },
      request: () => ({}),
      ok: [200],
    },
    // Reserved, not running: the owner is told access is not available yet (a state, not a refusal of the caller).
    'GET /api/v1/jobs/{id}/access': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: false, resource: 'job' },
      request: () => ({}),
      ok: [403],
    },
    'GET /api/v1/jobs/{id}/events': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: true, resource: 'job' },
      request: () => ({}),
      ok: [200],
    },
    // Owner only (issue 25 item 2); the fixture job has not started, so the owner is told its logs are not there yet.
    'GET /api/v1/jobs/{id}/logs': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: false, resource: 'job' },
      request: () => ({}),
      ok: [409],
    },
    'POST /api/v1/jobs/{id}/budget-extension': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: false, resource: 'job' },
      request: () => ({
        payload: { additional_budget_micro: '1', new_duration_limit_s: 7200, expected_job_version: '999', expected_budget_version: '999' },
      }),
      ok: [409],
    },
    'POST /api/v1/jobs/{id}/stop': {
      need: { scope: 'renter' },
      owner: { account: 'renterA', admin: true, resource: 'job' },
      request: () => ({ payload: { reason: 'matrix' } }),
      ok: [202],
    },
    // The relay: renter owner or admin; the fixture job runs no model template, so the owner is told so (a kind, not a refusal).
    ...Object.fromEntries(
      [
        'POST /api/v1/jobs/{id}/openai/v1/chat/completions',
        'POST /api/v1/jobs/{id}/openai/v1/completions',
        'GET /api/v1/jobs/{id}/openai/v1/models',
      ].map((key): [string, Rule] => [
        key,
        {
          need: { scope: 'renter' },
          owner: { account: 'renterA', admin: true, resource: 'job' },
          request: () => (key.startsWith('POST') ? { payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } } : {}),
          ok: [403],
        },
      ]),
    ),
    // Late: starts hosting for every caller allowed, renter B's session included (it gains the host scope after this).
    'POST /api/v1/hosts/enrollment-tokens': { need: { scope: 'host', orSession: true, hosting: true }, request: () => ({}), ok: [201] },
    'POST /api/v1/account/deletion-request': { need: { stepUp: true }, request: () => ({}), ok: [202] },
    'DELETE /api/v1/auth/sessions/current': { need: { session: true }, request: () => ({}), ok: [204] },
  };

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { authAttemptsPerMinute: 100_000 } });
    const { ctx, app, clock } = t;
    seeded.renterA = await seedAccount(ctx, { role: 'renter', stepUp: true });
    seeded.renterB = await seedAccount(ctx, { role: 'renter', scopes: ['renter'], stepUp: true });
    seeded.hostA = await seedAccount(ctx, { role: 'host', scopes: ['host'], stepUp: true });
    seeded.hostB = await seedAccount(ctx, { role: 'host', stepUp: true });
    seeded.admin = await seedAccount(ctx, { role: 'admin', withTotp: true, stepUp: true });
    const agentKeys = (await seedAgent(ctx, { keys: [['renter'], ['host'], ['renter', 'host']] })).apiKeys;
    // Renter A hosts: its session takes an enrollment token, which turns hosting on (and the session's host scope).
    await postAs(seeded.renterA.sessionToken, '/api/v1/hosts/enrollment-tokens', {});

    // Host A's machine, live with its seeded offer; renter A's job on it.
    const machineId = await enrollDirect(app, seeded.hostA);
    await agentHeartbeat(ctx, machineId);
    const offer = await ctx.store.db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
    await fund(ctx, seeded.renterA.accountId, 1_000_000_000n);
    const { jobId } = await reserveJob(app, seeded.renterA, { host: seeded.hostA, machineId, offerId: offer.id });
    fixtures = { machineId, jobId, offerId: offer.id };

    // Keys made over the API: single-scope keys, one that expires in a minute and one revoked.
    const renterKeyOfHostA = (await newKeyOf('hostA', ['renter'])).secret;
    const hostKeyOfRenterA = (await newKeyOf('renterA', ['host'])).secret;
    const expiring = (await newKeyOf('renterA', ['renter', 'host'], later(clock.now(), 60_000))).secret;
    const revoked = await newKeyOf('renterA', ['renter', 'host']);
    const revokedRes = await app.inject({
      method: 'DELETE',
      url: `/api/v1/account/api-keys/${revoked.api_key_id}`,
      headers: bearer(seeded.renterA.sessionToken),
    });
    expect(revokedRes.statusCode).toBe(200);
    // Both still work until they expire or are revoked (so the 401s below are about that, nothing else).
    expect((await app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(expiring) })).statusCode).toBe(200);
    await clock.advance(61_000);
    // The machine stays online across the minute.
    await agentHeartbeat(ctx, machineId);

    Object.assign(tokens, {
      anonymous: null,
      renterA: seeded.renterA.sessionToken,
      renterB: seeded.renterB.apiKey,
      renterBSession: seeded.renterB.sessionToken,
      hostA: seeded.hostA.apiKey,
      hostB: seeded.hostB.sessionToken,
      adminSession: seeded.admin.sessionToken,
      adminKey: seeded.admin.apiKey,
      renterKeyOfHostA,
      hostKeyOfRenterA,
      agentRenterKey: agentKeys[0]!,
      agentHostKey: agentKeys[1]!,
      agentBothKey: agentKeys[2]!,
      expiredKey: expiring,
      revokedKey: revoked.secret,
    } satisfies Record<Who, string | null>);
    doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Json;
  });
  afterAll(async () => {
    await t?.destroy();
  });

  /** The document's operations, in the table's order (the last ones end sessions and accounts). */
  const operations = () => {
    const documented = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, op })),
    );
    // A rule `KEY #variant` is one more row for the operation KEY (a requirement that depends on the body).
    return Object.keys(RULES).flatMap((ruleKey) => {
      const found = documented.find((o) => o.key === operationOf(ruleKey));
      return found ? [{ ...found, ruleKey }] : [];
    });
  };
  const operationOf = (ruleKey: string) => ruleKey.split(' #')[0]!;

  it('has a row for every operation of the OpenAPI document, and the document states the same requirement', () => {
    const documented = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual([...new Set(Object.keys(RULES).map(operationOf))].sort());
    for (const { key, ruleKey, op } of operations()) {
      if (ruleKey !== key) continue;
      const need = RULES[key]?.need;
      if (need === 'public') {
        expect(op.security, key).toEqual([]);
        continue;
      }
      expect(op.security, key).toEqual([{ bearer: need?.scope ? [need.scope] : [] }]);
      const declared = op['x-ark-auth'] as Json;
      expect(Boolean(declared.admin), `${key} admin`).toBe(Boolean(need?.admin));
      expect(Boolean(declared.session), `${key} session`).toBe(Boolean(need?.session));
      expect(Boolean(declared.stepUp), `${key} step-up`).toBe(Boolean(need?.stepUp));
      expect(Boolean(declared.orSession), `${key} or session`).toBe(Boolean(need?.orSession));
      expect(Boolean(declared.scopeInBody), `${key} scope in body`).toBe(Boolean(need?.bodyScope));
    }
  });

  // A walk over every operation: minutes on a loaded 2-core machine, so its own bound.
  it('allows and refuses each cell as the contract says, with the exact envelope, and never tells which ids exist', {
    timeout: 240_000,
  }, async () => {
    const failures: string[] = [];
    const check = (label: string, ok: boolean, detail: string) => {
      if (!ok) failures.push(`${label}: ${detail}`);
    };
    const checkEnvelope = (label: string, res: { statusCode: number; headers: Json; body: string }) => {
      if (res.statusCode < 400) return;
      let body: Json | undefined;
      try {
        body = JSON.parse(res.body);
      } catch {}
      check(label, body !== undefined && isEnvelope(body) && Object.keys(body).length === 1, `not the envelope: ${res.body}`);
      check(label, body?.error?.request_id === res.headers['x-request-id'] && UUID.test(String(body?.error?.request_id)), 'request id');
      check(label, String(res.headers['cache-control']).includes('no-store'), 'cache-control');
    };

    for (const { ruleKey: key, method, path, op } of operations()) {
      const rule = RULES[key]!;
      const idempotent = (op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'idempotency-key');
      for (const who of PRINCIPALS) {
        const want = expected(rule, who);
        const id =
          rule.owner?.resource === 'machine'
            ? fixtures.machineId
            : rule.owner?.resource === 'job'
              ? fixtures.jobId
              : rule.fresh
                ? await rule.fresh()
                : randomUUID();
        const cell: Cell = { ...fixtures, who, id, now: t.clock.now() };
        const request = rule.request(cell);
        const url = request.url ?? path.replace('{id}', id);
        const res = await send(who, { method, ...request, url } as Request, idempotent);
        const label = `${key} as ${who}`;
        const code = res.statusCode >= 400 ? (JSON.parse(res.body)?.error?.code as string | undefined) : undefined;
        checkEnvelope(label, res);
        if (want.allowed) {
          check(
            label,
            rule.ok.includes(res.statusCode) && !REFUSALS.has(code ?? ''),
            `allowed: expected ${rule.ok.join('/')}, got ${res.statusCode} ${res.body.slice(0, 200)}`,
          );
        } else {
          check(
            label,
            res.statusCode === want.status && code === want.code,
            `expected ${want.status} ${want.code}, got ${res.statusCode} ${res.body.slice(0, 200)}`,
          );
        }
        if (rule.owner) {
          // The same request on an id nobody has: a refused caller gets the same refusal, anyone else 404.
          const missing = await send(
            who,
            { method, ...rule.request({ ...cell, id: randomUUID() }), url: path.replace('{id}', randomUUID()) } as Request,
            idempotent,
          );
          checkEnvelope(`${label} (missing id)`, missing);
          const missingCode = JSON.parse(missing.body)?.error?.code;
          // Judged as for a resource nobody owns: on a machine's routes a key without the scope learns only 404.
          const unowned = expected({ ...rule, owner: { ...rule.owner, account: 'nobody' as Account } }, who);
          const same = unowned.allowed || unowned.code === 'NOT_FOUND' ? { status: 404, code: 'NOT_FOUND' } : unowned;
          check(
            `${label} (missing id)`,
            missing.statusCode === same.status && missingCode === same.code,
            `expected ${same.status} ${same.code}, got ${missing.statusCode} ${missing.body.slice(0, 200)}`,
          );
        }
      }
    }
    expect(failures).toEqual([]);
  });
});
