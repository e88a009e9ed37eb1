import { statSync } from 'node:fs';
import type { Command } from 'commander';
import type { Hex } from 'viem';
import { action } from '../action.js';
import { parseAnswer } from '../client.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';
import { readTextFile } from '../input.js';
import { durationToSeconds, formatUsdc, usdcToMicro } from '../money.js';

// x402 top-up: the official client (@x402/fetch's wrapFetchWithPayment with @x402/evm's exact scheme over a viem
// local account) answers the 402 with a signed EIP-3009 USDC authorization from the wallet in --wallet-key-file.
// A settlement still being mined answers 202: the same request (same payment) is repeated until it answers 200.

const TOP_UP_PATH = '/api/v1/billing/x402/top-up';

interface TopUpResult {
  intent_id?: string;
  state: string;
  amount_micro?: string;
  credited_micro?: string;
  payer?: string;
  tx_hash?: string;
  network?: string;
}

function walletKey(path: string): Hex {
  const mode = statSync(path, { throwIfNoEntry: false })?.mode;
  if (mode === undefined) throw usageError(`no wallet key file ${path}`);
  if ((mode & 0o077) !== 0) throw usageError(`${path} is readable by others (chmod 600 it): it holds a private key`);
  const key = readTextFile(path, 'wallet key file').trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw usageError(`${path} must hold one 0x-prefixed 32-byte hex private key`);
  return key as Hex;
}

export function registerTopUpCommand(program: Command): void {
  program
    .command('topup')
    .description('Top up the balance with USDC on Base over x402, paid from the wallet whose private key is in --wallet-key-file (0600)')
    .requiredOption('--amount <usdc>', 'amount in USDC')
    .requiredOption('--wallet-key-file <file>', 'file holding the paying wallet’s private key (0x… hex), mode 0600')
    .option('--timeout <duration>', 'how long to wait for the settlement', '2m')
    .action(
      action(async (ctx, options: { amount: string; walletKeyFile: string; timeout: string }) => {
        const amount = usdcToMicro(options.amount, '--amount');
        // Loaded here, not at start: viem and the x402 client are most of the CLI's weight and only topup needs them.
        const [{ ExactEvmScheme }, { wrapFetchWithPayment, x402Client }, { privateKeyToAccount }] = await Promise.all([
          import('@x402/evm/exact/client'),
          import('@x402/fetch'),
          import('viem/accounts'),
        ]);
        const account = privateKeyToAccount(walletKey(options.walletKeyFile));
        const client = new x402Client();
        client.register('eip155:8453', new ExactEvmScheme(account));
        // Never sign more than asked for, whatever the server's requirement says.
        client.setSpendControls({ maxAmountPerPayment: `$${formatUsdc(amount)}` });
        let sentHeader: string | null = null;
        const recording = async (input: string | URL | Request, init?: RequestInit) => {
          const request = new Request(input, init);
          sentHeader = request.headers.get('payment-signature') ?? sentHeader;
          return fetch(request);
        };
        const pay = wrapFetchWithPayment(recording as typeof fetch, client);
        const url = ctx.api.url(TOP_UP_PATH, { amount_micro: amount.toString() });
        const headers = ctx.api.headers();
        ctx.out.note(`Paying ${formatUsdc(amount)} USDC from ${account.address}…`);
        let response: Response;
        try {
          response = await pay(url, { method: 'POST', headers });
        } catch (error) {
          if (error instanceof CliError) throw error;
          throw new CliError(EXIT.paymentRequired, 'PAYMENT_FAILED', `x402 payment failed: ${(error as Error).message}`);
        }
        const deadline = Date.now() + durationToSeconds(options.timeout, '--timeout') * 1000;
        let result = (await parseAnswer(response)) as TopUpResult;
        while (response.status === 202 && sentHeader !== null) {
          if (Date.now() > deadline)
            throw new CliError(EXIT.apiError, 'SETTLEMENT_TIMEOUT', `the settlement ${result.tx_hash ?? ''} is not mined yet`);
          ctx.out.note(`Settlement ${result.tx_hash ?? ''} broadcast; waiting for it to be mined…`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
          response = await ctx.api.raw('POST', TOP_UP_PATH, {
            query: { amount_micro: amount.toString() },
            headers: { 'payment-signature': sentHeader },
          });
          result = (await parseAnswer(response)) as TopUpResult;
        }
        ctx.out.result(result, () =>
          ctx.out.line(
            `Top-up ${result.intent_id ?? ''}: ${formatUsdc(result.amount_micro ?? amount)} USDC, ${result.state}` +
              (result.state === 'PENDING_FINALITY' ? ' (credited once final on chain)' : '') +
              (result.tx_hash === undefined ? '' : `, tx ${result.tx_hash}`),
          ),
        );
      }),
    );
}
