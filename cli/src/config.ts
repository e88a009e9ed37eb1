import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

// Where the CLI keeps its credential: `ark login` writes {url, api_key} to a 0600 file in the XDG config
// directory ($ARK_CONFIG_DIR, else $XDG_CONFIG_HOME/ark, else ~/.config/ark). ARK_API_KEY and ARK_URL win over it.

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface StoredConfig {
  url?: string;
  api_key?: string;
}

export interface ResolvedConfig {
  url: string;
  apiKey: string | null;
  /** Where the key came from, for `ark whoami` and error messages. */
  keySource: 'env' | 'file' | null;
  configPath: string;
}

export function configDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ARK_CONFIG_DIR) return env.ARK_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'ark');
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDirectory(env), 'config.json');
}

export function readStoredConfig(path: string): StoredConfig {
  if (!existsSync(path)) return {};
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object') throw new Error('not an object');
    const { url, api_key } = parsed as Record<string, unknown>;
    return { ...(typeof url === 'string' ? { url } : {}), ...(typeof api_key === 'string' ? { api_key } : {}) };
  } catch (error) {
    throw new CliError(EXIT.usage, 'CONFIG_INVALID', `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Writes the file with 0600 from the start (and again after, in case it existed with wider permissions). */
export function writeStoredConfig(path: string, config: StoredConfig): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

export function removeStoredConfig(path: string): boolean {
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

export function resolveConfig(options: { url?: string }, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  const path = configPath(env);
  const stored = readStoredConfig(path);
  // An empty variable counts as unset (`ARK_URL= ark ...`).
  const url = (options.url || env.ARK_URL || stored.url || DEFAULT_URL).replace(/\/+$/, '');
  const fromEnv = env.ARK_API_KEY !== undefined && env.ARK_API_KEY !== '' ? env.ARK_API_KEY : null;
  const apiKey = fromEnv ?? stored.api_key ?? null;
  return { url, apiKey, keySource: fromEnv !== null ? 'env' : stored.api_key !== undefined ? 'file' : null, configPath: path };
}
