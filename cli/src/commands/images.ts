import type { Command } from 'commander';
import { action } from '../action.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';
import { ImageReferenceError, RegistryError, resolveImageDigest } from '../images.js';

// `ark images resolve REF`: the digest an image tag names now, to pin it (jobs run images by digest only).

export function registerImageCommands(program: Command): void {
  const images = program.command('images').description('Container images: pin a tag to its digest');
  images
    .command('resolve <reference>')
    .description(
      'Ask the image’s registry (anonymously) which digest a tag names now, and print the reference pinned by digest, e.g. ark images resolve ghcr.io/org/app:1.2',
    )
    .option('--plain-http', 'talk to the registry over http (a loopback registry always is)')
    .action(
      action(async (ctx, reference: string, options: { plainHttp?: boolean }) => {
        let resolved: Awaited<ReturnType<typeof resolveImageDigest>>;
        try {
          resolved = await resolveImageDigest(reference, { plainHttp: options.plainHttp === true });
        } catch (error) {
          if (error instanceof ImageReferenceError) throw usageError(error.message);
          if (error instanceof RegistryError) {
            const exit = error.status === 404 ? EXIT.notFound : error.status === 401 || error.status === 403 ? EXIT.auth : EXIT.apiError;
            throw new CliError(exit, 'REGISTRY', error.message, error.status === undefined ? {} : { status: error.status });
          }
          throw new CliError(EXIT.unreachable, 'UNREACHABLE', `the registry could not be reached: ${(error as Error).message}`);
        }
        ctx.out.result(resolved, () => {
          ctx.out.line(resolved.pinned);
        });
      }),
    );
}
