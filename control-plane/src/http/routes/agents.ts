import { AgentChallenge, AgentChallengeRequest, AgentRegistration, AgentRegistrationRequest, WalletStepUpChallenge } from '@ark/shared';
import { agentChallengeView, agentRegistrationView, walletStepUpChallengeView } from '../../views/accounts.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { limitAuthAttempts } from '../rate-limit.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Agent self-registration by wallet (contract parts 4 and 5, item 6) and the wallet step-up challenge. */
export function registerAgentRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const accounts = ctx.services.accounts;

  /** The sign-in budget (ARK_AUTH_ATTEMPTS_PER_MIN) per key; any exhausted key is 429 UNAVAILABLE. */
  const limitAttempts = (keys: string[]) =>
    limitAuthAttempts(ctx.rateLimiter, { keys, perMinute: config.authAttemptsPerMinute, now: clock.now() });

  app.post(
    '/api/v1/agents/accounts/challenge',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Agent registration, step 1: an EIP-4361 message for the wallet to sign (five minutes, single use)',
        tags: ['agents'],
        security: [],
        body: AgentChallengeRequest,
        response: withErrors({ 200: AgentChallenge }, 503),
      },
    },
    async (request) => {
      const { address } = request.body;
      await limitAttempts([`agent-challenge:ip:${request.ip}`, `agent-challenge:wallet:${address.toLowerCase()}`]);
      return agentChallengeView(await accounts.agentRegistrationChallenge(address));
    },
  );

  app.post(
    '/api/v1/agents/accounts',
    {
      config: { auth: 'public' },
      schema: {
        summary:
          'Agent registration, step 2: the signed challenge creates the agent account (or finds it) and answers a new renter key once',
        tags: ['agents'],
        security: [],
        body: AgentRegistrationRequest,
        response: withErrors({ 201: AgentRegistration }, 403, 503),
      },
    },
    async (request, reply) => {
      // Signature recovery costs CPU: bounded per source address like any sign-in.
      await limitAttempts([`agent-register:ip:${request.ip}`]);
      const { message, signature, agent } = request.body;
      const registered = await accounts.registerAgent({ message, signature, agent });
      return reply.code(201).send(agentRegistrationView(registered));
    },
  );

  app.post(
    '/api/v1/account/step-up/challenge',
    {
      config: { auth: {} },
      schema: {
        summary: "Wallet step-up, step 1: an EIP-4361 message for the account's sign-in wallet (answer it at POST /api/v1/account/step-up)",
        tags: ['account'],
        response: withErrors({ 200: WalletStepUpChallenge }, 403, 409, 503),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`stepup:ip:${request.ip}`, `stepup:account:${principal.accountId}`]);
      return walletStepUpChallengeView(await accounts.walletStepUpChallenge(principal));
    },
  );
}
