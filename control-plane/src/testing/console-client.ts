import type { ManualClock } from '../clock.js';
import type { SeededAccount, TestApp } from './app.js';

// The console over the in-process app, as a browser without scripts uses it (console tests).

/** The cookies a browser would keep for /console, and the CSRF token of the last page read. */
export class ConsoleClient {
  cookies = new Map<string, string>();
  csrf = '';
  constructor(private readonly t: TestApp<ManualClock>) {}

  private keep(headers: Record<string, unknown>): void {
    const raw = headers['set-cookie'];
    for (const line of Array.isArray(raw) ? raw : raw ? [raw as string] : []) {
      const [pair] = String(line).split(';');
      const at = (pair ?? '').indexOf('=');
      const name = (pair ?? '').slice(0, at);
      const value = (pair ?? '').slice(at + 1);
      if (value === '' || /Expires=Thu, 01 Jan 1970/i.test(String(line))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string) {
    const res = await this.t.app.inject({ method: 'GET', url, headers: { cookie: this.cookieHeader() } });
    this.keep(res.headers);
    const token = /name="_csrf" value="([^"]+)"/.exec(res.body);
    if (token?.[1]) this.csrf = token[1];
    return res;
  }

  async post(url: string, fields: Record<string, string>, options: { csrf?: boolean } = {}) {
    const form = new URLSearchParams({ ...(options.csrf === false ? {} : { _csrf: this.csrf }), ...fields });
    const res = await this.t.app.inject({
      method: 'POST',
      url,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: form.toString(),
    });
    this.keep(res.headers);
    return res;
  }

  /** A form action posted as JSON, as a script might: `text` is sent as is. */
  async postJson(url: string, text: string) {
    const res = await this.t.app.inject({
      method: 'POST',
      url,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/json' },
      payload: text,
    });
    this.keep(res.headers);
    return res;
  }

  async signIn(account: SeededAccount) {
    await this.get('/console/login');
    return this.post('/console/login', { email: account.email, password: account.password });
  }
}
