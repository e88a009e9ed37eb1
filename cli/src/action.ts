import type { Command } from 'commander';
import { type CommandContext, contextOf } from './context.js';
import { Output } from './output.js';

// Every command's body runs through here: it gets a context, and whatever it throws becomes a printed error and
// a stable exit code (exit-codes.ts). Bodies return an exit code only when it is not 0 (ssh passes its own through).

export type CommandBody<A extends unknown[]> = (ctx: CommandContext, ...args: A) => Promise<number | undefined> | Promise<void>;

export function action<A extends unknown[]>(body: CommandBody<A>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const positional = args.slice(0, -1) as A;
    let out: Output | undefined;
    try {
      const ctx = contextOf(command);
      out = ctx.out;
      const code = await body(ctx, ...positional);
      if (typeof code === 'number') process.exitCode = code;
    } catch (error) {
      out ??= new Output({ json: command.optsWithGlobals<{ json?: boolean }>().json === true });
      process.exitCode = out.error(error);
    }
  };
}

/** The options commander parsed for this command (its own, without the globals). */
export function optionsOf<T>(args: unknown[]): T {
  return args[args.length - 1] as T;
}
