import type { Command } from 'commander';
import { ApiClient } from './client.js';
import { type ResolvedConfig, resolveConfig } from './config.js';
import { Output } from './output.js';

// What every command gets: its output (json or human), the resolved configuration and an API client.

export interface GlobalOptions {
  json?: boolean;
  url?: string;
}

export interface CommandContext {
  out: Output;
  config: ResolvedConfig;
  api: ApiClient;
  env: NodeJS.ProcessEnv;
}

export function contextOf(command: Command, env: NodeJS.ProcessEnv = process.env): CommandContext {
  const options = command.optsWithGlobals<GlobalOptions>();
  const config = resolveConfig({ ...(options.url === undefined ? {} : { url: options.url }) }, env);
  return { out: new Output({ json: options.json === true }), config, api: new ApiClient(config.url, config.apiKey), env };
}
