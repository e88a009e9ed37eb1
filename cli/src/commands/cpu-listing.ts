import type { Command } from 'commander';
import { action } from '../action.js';

// A host lists a machine that reports no GPU as a CPU machine (issue 25, item 7): only then is it offered, shown as
// one in offer search (POST /api/v1/hosts/machines/{id}/cpu-listing).

export function registerCpuListingCommand(machines: Command): void {
  machines
    .command('cpu-listing <machine-id>')
    .description('List a machine that reports no GPU as a CPU machine (it is offered only then), or stop with --off')
    .option('--off', 'stop listing it as a CPU machine: a machine without GPUs leaves the offer search')
    .action(
      action(async (ctx, machineId: string, options: { off?: boolean }) => {
        const listed = !options.off;
        const answer = await ctx.api.post<{ machine_id: string; cpu_listing: boolean; gpu_count: number }>(
          `/api/v1/hosts/machines/${encodeURIComponent(machineId)}/cpu-listing`,
          { cpu_listing: listed },
          { idempotent: true },
        );
        ctx.out.result(answer, () => {
          if (answer.gpu_count > 0) {
            ctx.out.line(
              `${answer.machine_id} reports ${answer.gpu_count} GPUs: it is offered as a GPU machine either way (CPU listing ${listed ? 'on' : 'off'}).`,
            );
          } else {
            ctx.out.line(
              listed
                ? `${answer.machine_id} is listed as a CPU machine: offer search shows it as one (no GPU; rented whole).`
                : `${answer.machine_id} is no longer listed as a CPU machine: it reports no GPU, so it is not offered.`,
            );
          }
        });
      }),
    );
}
