import { hostname } from 'node:os';
import type { Command } from 'commander';
import { action } from '../action.js';
import { ApiClient, type Page } from '../client.js';
import { removeStoredConfig, writeStoredConfig } from '../config.js';
import { usageError } from '../exit-codes.js';
import { secretFromStdin } from '../input.js';
import { durationToSeconds, formatUsdc } from '../money.js';
import { STEP_UP_HELP, type StepUpOptions, withStepUp } from '../step-up.js';

// Account faces: login/logout/whoami, API keys, balance, deposit address, support tickets.

interface Account {
  account_id: string;
  email: string;
  role: string;
  host_enabled: boolean;
  email_verified: boolean;
  two_factor_enabled: boolean;
  auth_method: string;
  step_up_method: string;
  name?: string | null;
}

const SCOPES = ['renter', 'host'] as const;

function parseScopes(text: string): string[] {
  const scopes = [...new Set(text.split(',').map((scope) => scope.trim()))];
  for (const scope of scopes)
    if (!(SCOPES as readonly string[]).includes(scope)) throw usageError(`unknown scope "${scope}" (renter, host)`);
  return scopes;
}

function showAccount(out: import('../output.js').Output, account: Account, extra: Array<[string, string]> = []): void {
  out.fields([
    ['account', account.account_id],
    ['email', account.email],
    ['role', account.role],
    ['hosting', account.host_enabled ? 'on' : 'off'],
    ['email verified', account.email_verified],
    ['two-factor', account.two_factor_enabled],
    ['step-up', account.step_up_method],
    ['authenticated by', account.auth_method],
    ...extra,
  ]);
}

export function registerAccountCommands(program: Command): void {
  program
    .command('login')
    .description(
      'Store an API key (0600 file in the config directory). The key comes from ARK_API_KEY or stdin (--api-key-stdin); ' +
        'with --email, signs in with the password (ARK_PASSWORD or --password-stdin) and creates a key for this machine',
    )
    .option('--api-key-stdin', 'read the API key from standard input')
    .option('--email <email>', 'sign in with email and password, and create an API key')
    .option('--password-stdin', 'read the password from standard input (with --email)')
    .option('--scopes <list>', 'scopes of the key created with --email (renter,host); default: renter, plus host once the account hosts')
    .option('--label <label>', 'label of the key created with --email', `ark CLI on ${hostname()}`)
    .action(
      action(async (ctx, options: { apiKeyStdin?: boolean; email?: string; passwordStdin?: boolean; scopes?: string; label: string }) => {
        let key: string;
        if (options.email !== undefined) {
          const password = options.passwordStdin ? await secretFromStdin('password') : ctx.env.ARK_PASSWORD;
          if (password === undefined || password === '') throw usageError('--email needs the password in ARK_PASSWORD or --password-stdin');
          const anonymous = new ApiClient(ctx.config.url, null);
          const session = await anonymous.post<{ session_token: string }>(
            '/api/v1/auth/sessions',
            { email: options.email, password },
            { anonymous: true },
          );
          const signedIn = new ApiClient(ctx.config.url, session.session_token);
          try {
            const account = await signedIn.get<Account>('/api/v1/account');
            const scopes =
              options.scopes !== undefined
                ? parseScopes(options.scopes)
                : account.role === 'host' || account.host_enabled
                  ? ['renter', 'host']
                  : ['renter'];
            await signedIn.post('/api/v1/account/step-up', { password });
            const created = await signedIn.post<{ secret: string }>(
              '/api/v1/account/api-keys',
              { label: options.label, scopes },
              { idempotent: true },
            );
            key = created.secret;
          } finally {
            await signedIn.request('DELETE', '/api/v1/auth/sessions/current').catch(() => undefined);
          }
        } else if (options.apiKeyStdin) {
          key = await secretFromStdin('API key');
        } else if (ctx.env.ARK_API_KEY) {
          key = ctx.env.ARK_API_KEY;
        } else {
          throw usageError('give the key on stdin with --api-key-stdin, in ARK_API_KEY, or sign in with --email');
        }
        // Checked before it is stored: a typo must not become the default credential.
        const account = await new ApiClient(ctx.config.url, key).get<Account>('/api/v1/account');
        writeStoredConfig(ctx.config.configPath, { url: ctx.config.url, api_key: key });
        ctx.out.result(
          {
            logged_in: true,
            url: ctx.config.url,
            config_path: ctx.config.configPath,
            account_id: account.account_id,
            email: account.email,
            role: account.role,
          },
          () =>
            ctx.out.line(`Logged in to ${ctx.config.url} as ${account.email} (${account.role}); key stored in ${ctx.config.configPath}`),
        );
      }),
    );

  program
    .command('logout')
    .description('Forget the stored API key (the key itself stays valid: revoke it with `ark keys revoke`)')
    .action(
      action(async (ctx) => {
        const removed = removeStoredConfig(ctx.config.configPath);
        ctx.out.result({ logged_out: removed, config_path: ctx.config.configPath }, () =>
          ctx.out.line(removed ? `Removed ${ctx.config.configPath}` : 'No stored key'),
        );
      }),
    );

  program
    .command('whoami')
    .description('The account behind the credential in use')
    .action(
      action(async (ctx) => {
        const account = await ctx.api.get<Account>('/api/v1/account');
        ctx.out.result({ ...account, url: ctx.config.url, key_source: ctx.config.keySource }, () =>
          showAccount(ctx.out, account, [
            ['control plane', ctx.config.url],
            ['key from', ctx.config.keySource === 'env' ? 'ARK_API_KEY' : ctx.config.configPath],
          ]),
        );
      }),
    );

  const keys = program.command('keys').description('API keys of the account');
  keys
    .command('create')
    .description(`Create an API key; the secret is shown once (needs a ${STEP_UP_HELP})`)
    .requiredOption('--label <label>', 'what the key is for')
    .option('--scopes <list>', 'renter, host or renter,host', 'renter')
    .option('--expires-in <duration>', 'lifetime, like 30d or 12h (default: no expiry)')
    .option('--totp <code>', 'TOTP code for the step-up')
    .option('--password-stdin', 'read the password for the step-up from standard input')
    .action(
      action(async (ctx, options: { label: string; scopes: string; expiresIn?: string } & StepUpOptions) => {
        const body: Record<string, unknown> = { label: options.label, scopes: parseScopes(options.scopes) };
        if (options.expiresIn !== undefined) {
          body.expires_at = new Date(Date.now() + durationToSeconds(options.expiresIn, '--expires-in') * 1000).toISOString();
        }
        const created = await withStepUp(ctx.api, options, ctx.env, (api) =>
          api.post<{ api_key_id: string; secret: string; scopes: string[]; expires_at: string | null }>('/api/v1/account/api-keys', body, {
            idempotent: true,
          }),
        );
        ctx.out.result(created, () => {
          ctx.out.line(created.secret);
          ctx.out.note(`Key ${created.api_key_id} (${created.scopes.join(',')}); the secret above is shown only this once.`);
        });
      }),
    );
  keys
    .command('list')
    .description('The account’s API keys (never their secrets)')
    .action(
      action(async (ctx) => {
        const items = await ctx.api.all<{
          api_key_id: string;
          label: string;
          scopes: string[];
          prefix: string;
          created_at: string;
          expires_at: string | null;
          last_used_at: string | null;
        }>('/api/v1/account/api-keys');
        ctx.out.result({ items }, () =>
          ctx.out.table(
            ['KEY', 'LABEL', 'SCOPES', 'PREFIX', 'CREATED', 'EXPIRES', 'LAST USED'],
            items.map((k) => [k.api_key_id, k.label, k.scopes.join(','), k.prefix, k.created_at, k.expires_at ?? 'never', k.last_used_at]),
          ),
        );
      }),
    );
  keys
    .command('revoke <key-id>')
    .description('Revoke an API key at once')
    .action(
      action(async (ctx, keyId: string) => {
        const answer = await ctx.api.request<{ revoked: true }>('DELETE', `/api/v1/account/api-keys/${encodeURIComponent(keyId)}`);
        ctx.out.result({ api_key_id: keyId, ...answer }, () => ctx.out.line(`Revoked ${keyId}`));
      }),
    );

  program
    .command('balance')
    .description('Prepaid balance: available and held by jobs, with recent deposits and top-ups')
    .action(
      action(async (ctx) => {
        const balance = await ctx.api.get<{
          available_micro: string;
          held_micro: string;
          currency: string;
          deposits: Page<{ state: string; amount_micro?: string; credited_micro?: string; network?: string; tx_hash?: string }>;
          top_ups: Page<{ state: string; amount_micro: string; tx_hash?: string; created_at?: string }>;
        }>('/api/v1/billing/balance');
        ctx.out.result(balance, () => {
          ctx.out.fields([
            ['available', `${formatUsdc(balance.available_micro)} ${balance.currency}`],
            ['held by jobs', `${formatUsdc(balance.held_micro)} ${balance.currency}`],
            ['deposits (recent)', balance.deposits.items.length],
            ['x402 top-ups (recent)', balance.top_ups.items.length],
          ]);
        });
      }),
    );

  program
    .command('deposit')
    .description('The account’s deposit address, with a QR code on a terminal')
    .option('--qr', 'print the QR code even when stdout is not a terminal')
    .option('--no-qr', 'never print the QR code')
    .action(
      action(async (ctx, options: { qr?: boolean }) => {
        const deposit = await ctx.api.get<{
          address: string;
          network: string;
          chain_id: number;
          networks: Array<Record<string, unknown>>;
          assets: Array<Record<string, unknown>>;
          min_deposit_micro: string;
          max_deposit_micro: string | null;
          deposits: Array<Record<string, unknown>>;
        }>('/api/v1/billing/deposit-address');
        // --qr forces it, --no-qr suppresses it, and by default a terminal gets it.
        const showQr = options.qr ?? ctx.out.interactive;
        const qr = showQr ? await (await import('qrcode')).default.toString(deposit.address, { type: 'terminal', small: true }) : null;
        ctx.out.result({ ...deposit, ...(qr === null ? {} : { qr }) }, () => {
          ctx.out.line(deposit.address);
          if (qr !== null) ctx.out.line(qr);
          ctx.out.fields([
            ['networks', deposit.networks.map((n) => String(n.network ?? n.name ?? n.chain_id)).join(', ')],
            ['assets', deposit.assets.map((a) => String(a.symbol ?? a.asset ?? '?')).join(', ')],
            ['minimum deposit', `${formatUsdc(deposit.min_deposit_micro)} USD`],
            ['room under the cap', deposit.max_deposit_micro === null ? 'no limit' : `${formatUsdc(deposit.max_deposit_micro)} USD`],
            ['recent deposits', deposit.deposits.length],
          ]);
        });
      }),
    );

  const tickets = program.command('tickets').description('Support tickets');
  tickets
    .command('list', { isDefault: true })
    .description('Tickets you opened')
    .action(
      action(async (ctx) => {
        const items = await ctx.api.all<{ ticket_id: string; category: string; state: string; job_id: string | null; created_at: string }>(
          '/api/v1/tickets',
        );
        ctx.out.result({ items }, () =>
          ctx.out.table(
            ['TICKET', 'CATEGORY', 'STATE', 'JOB', 'CREATED'],
            items.map((t) => [t.ticket_id, t.category, t.state, t.job_id, t.created_at]),
          ),
        );
      }),
    );
  tickets
    .command('create')
    .description('Open a ticket')
    .requiredOption('--category <category>', 'billing, rental, hosting, account, other')
    .requiredOption('--text <text>', 'what happened')
    .option('--job <job-id>', 'the job it is about')
    .action(
      action(async (ctx, options: { category: string; text: string; job?: string }) => {
        const created = await ctx.api.post<{ ticket_id: string }>(
          '/api/v1/tickets',
          { category: options.category, text: options.text, ...(options.job === undefined ? {} : { job_id: options.job }) },
          { idempotent: true },
        );
        ctx.out.result(created, () => ctx.out.line(`Opened ticket ${created.ticket_id}`));
      }),
    );
  tickets
    .command('show <ticket-id>')
    .description('One ticket with its messages')
    .action(
      action(async (ctx, ticketId: string) => {
        const ticket = await ctx.api.get<Record<string, unknown>>(`/api/v1/tickets/${encodeURIComponent(ticketId)}`);
        ctx.out.result(ticket, () => {
          const { messages, ...rest } = ticket as {
            messages?: Array<{ at?: string; created_at?: string; author?: string; text?: string }>;
          };
          ctx.out.fields(
            Object.entries(rest).map(([k, v]) => [k, typeof v === 'object' && v !== null ? JSON.stringify(v) : (v as string)]),
          );
          for (const message of messages ?? [])
            ctx.out.line(`[${message.created_at ?? message.at ?? ''}] ${message.author ?? ''}: ${message.text ?? ''}`);
        });
      }),
    );
  tickets
    .command('reply <ticket-id>')
    .description('Post a message to an open ticket')
    .requiredOption('--text <text>', 'the message')
    .action(
      action(async (ctx, ticketId: string, options: { text: string }) => {
        await ctx.api.post(`/api/v1/tickets/${encodeURIComponent(ticketId)}/messages`, { text: options.text }, { idempotent: true });
        ctx.out.result({ ticket_id: ticketId, posted: true }, () => ctx.out.line(`Posted to ${ticketId}`));
      }),
    );
}
