import type { MachineVerificationView } from '@ark/shared';
import type { Command } from 'commander';
import { action } from '../action.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';

// Hardware receipts from the renter's side (issue 24 item 2): `ark machines verify ID` checks a machine's signed
// self-test receipts itself, trusting nothing the control plane says about them but the bytes it serves; `ark machines
// selftest ID` is the host asking for a new one.

export function registerMachineVerifyCommands(machines: Command): void {
  machines
    .command('verify <machine-id>')
    .description(
      'Check a machine’s signed hardware receipts yourself: each signature against its public key (the served one, or the one you ' +
        'pin with --public-key), the machine it names, and the score recomputed from its figures. Exits 9 on any failure.',
    )
    .option('--public-key <base64>', 'the machine’s ed25519 public key you trust (base64, 32 bytes), instead of the served one')
    .action(
      action(async (ctx, machineId: string, options: { publicKey?: string }) => {
        if (options.publicKey !== undefined && Buffer.from(options.publicKey, 'base64').length !== 32) {
          throw usageError('--public-key must be the base64 of a 32-byte ed25519 public key');
        }
        const view = await ctx.api.get<MachineVerificationView>(`/api/v1/machines/${encodeURIComponent(machineId)}/verification`, {
          anonymous: true,
        });
        const key = options.publicKey ?? view.public_key;
        const { checkServedReceipt } = await import('./receipt-check.js');
        const verdicts = view.receipts.map((served) => checkServedReceipt(served, key, machineId));
        const failed = verdicts.filter((v) => !v.ok);
        // The latest ok receipt with a benchmark is what the served score claims to come from.
        const latestScored = verdicts.find((v) => v.ok && v.score !== null);
        const scoreProblem =
          failed.length === 0 && (latestScored?.score ?? null) !== view.score
            ? `the served score ${view.score} is not the latest scored receipt's ${latestScored?.score ?? null}`
            : null;
        const verified = view.receipts.length > 0 && failed.length === 0 && scoreProblem === null;
        const result = {
          machine_id: machineId,
          public_key: key,
          key_source: options.publicKey !== undefined ? 'pinned' : 'served',
          verified,
          score: view.score,
          verified_at: view.verified_at,
          unlisted: view.unlisted,
          receipts: verdicts,
        };
        // With --json a failure is the error envelope alone (its details carry the verdicts); people see the table first.
        const human = () => {
          ctx.out.fields([
            ['machine', machineId],
            ['public key', `${key} (${result.key_source})`],
            ['score', view.score ?? 'none'],
            ['verified at', view.verified_at ?? 'never'],
            ['unlisted', view.unlisted ? view.contradictions.map((c) => c.message).join(' ') : 'no'],
          ]);
          ctx.out.table(
            ['RECEIPT', 'CHECK', 'MEASURED', 'SCORE'],
            verdicts.map((v) => [v.receipt_seq, v.ok ? 'ok' : `FAILED: ${v.problem}`, v.measured_at ?? '-', v.score ?? '-']),
          );
        };
        if (!verified && !ctx.out.json) human();
        if (verified) ctx.out.result(result, human);
        if (view.receipts.length === 0) {
          throw new CliError(EXIT.verificationFailed, 'NO_RECEIPTS', 'the machine has no hardware receipt to verify', result);
        }
        if (failed.length > 0) {
          throw new CliError(
            EXIT.verificationFailed,
            'RECEIPT_INVALID',
            `${failed.length} of ${verdicts.length} receipt(s) failed: ${failed.map((v) => `#${v.receipt_seq} ${v.problem}`).join('; ')}`,
            result,
          );
        }
        if (scoreProblem !== null) throw new CliError(EXIT.verificationFailed, 'SCORE_MISMATCH', scoreProblem, result);
        ctx.out.note(`Verified: ${verdicts.length} receipt(s) signed by ${key}; score ${view.score ?? 'none'}.`);
      }),
    );

  machines
    .command('selftest <machine-id>')
    .description('Ask your machine for a hardware self-test now; its signed receipt shows in `ark machines verify`')
    .action(
      action(async (ctx, machineId: string) => {
        const queued = await ctx.api.post<{ machine_id: string; command_id: string; state: string }>(
          `/api/v1/hosts/machines/${encodeURIComponent(machineId)}/selftest`,
          undefined,
          { idempotent: true },
        );
        ctx.out.result(queued, () => ctx.out.line(`Self-test ${queued.command_id} queued (${queued.state})`));
      }),
    );
}
