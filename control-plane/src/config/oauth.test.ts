// The sign-in provider variables: off by default, the real providers' URLs as defaults, loopback overrides for tests,
// and refusals naming the variable.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });

describe('sign-in provider configuration', () => {
  it('defaults: no provider, a started sign-in lasts 10 minutes', () => {
    expect(load().oauth).toEqual({ github: null, google: null, stateTtlMs: 600_000 });
  });

  it('a provider is on with its client id and secret, at the real endpoints unless told otherwise', () => {
    const config = load({
      ARK_OAUTH_GITHUB_CLIENT_ID: 'Iv1.abc',
      ARK_OAUTH_GITHUB_CLIENT_SECRET: 'secret',
      ARK_OAUTH_GOOGLE_CLIENT_ID: 'id.apps.googleusercontent.com',
      ARK_OAUTH_GOOGLE_CLIENT_SECRET: 'GOCSPX-secret',
      ARK_OAUTH_STATE_TTL_S: '60',
    });
    expect(config.oauth).toEqual({
      github: {
        clientId: 'Iv1.abc',
        clientSecret: 'secret',
        authorizeUrl: 'https://github.com/login/oauth/authorize',
        tokenUrl: 'https://github.com/login/oauth/access_token',
        apiUrl: 'https://api.github.com',
      },
      google: { clientId: 'id.apps.googleusercontent.com', clientSecret: 'GOCSPX-secret', issuer: 'https://accounts.google.com' },
      stateTtlMs: 60_000,
    });
    const local = load({
      ARK_OAUTH_GOOGLE_CLIENT_ID: 'a',
      ARK_OAUTH_GOOGLE_CLIENT_SECRET: 'b',
      ARK_OAUTH_GOOGLE_ISSUER: 'http://127.0.0.1:9000/',
      ARK_OAUTH_GITHUB_API_URL: 'http://127.0.0.1:9001',
    });
    expect(local.oauth.google?.issuer).toBe('http://127.0.0.1:9000');
    // Checked even while GitHub is off.
    expect(local.oauth.github).toBeNull();
  });

  it('refuses half a client, bad URLs and the retired ARK_OIDC_ISSUER, naming the variable', () => {
    for (const [env, name] of [
      [{ ARK_OAUTH_GITHUB_CLIENT_ID: 'a' }, 'ARK_OAUTH_GITHUB_CLIENT_SECRET'],
      [{ ARK_OAUTH_GOOGLE_CLIENT_SECRET: 'a' }, 'ARK_OAUTH_GOOGLE_CLIENT_ID'],
      [{ ARK_OAUTH_GITHUB_CLIENT_ID: 'has space', ARK_OAUTH_GITHUB_CLIENT_SECRET: 'b' }, 'ARK_OAUTH_GITHUB_CLIENT_ID'],
      [{ ARK_OAUTH_GOOGLE_ISSUER: 'accounts.google.com' }, 'ARK_OAUTH_GOOGLE_ISSUER'],
      [{ ARK_OAUTH_GOOGLE_ISSUER: 'ftp://accounts.google.com' }, 'ARK_OAUTH_GOOGLE_ISSUER'],
      [{ ARK_OAUTH_GITHUB_TOKEN_URL: 'https://user:pw@github.com/token' }, 'ARK_OAUTH_GITHUB_TOKEN_URL'],
      [{ ARK_OAUTH_GITHUB_AUTHORIZE_URL: 'https://github.com/authorize?x=1' }, 'ARK_OAUTH_GITHUB_AUTHORIZE_URL'],
      [{ ARK_OAUTH_STATE_TTL_S: '5' }, 'ARK_OAUTH_STATE_TTL_S'],
      [{ ARK_OIDC_ISSUER: 'https://accounts.google.com' }, 'ARK_OIDC_ISSUER'],
    ] as const) {
      expect(() => load(env as Record<string, string>), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => load(env as Record<string, string>), JSON.stringify(env)).toThrow(name);
    }
  });
});
