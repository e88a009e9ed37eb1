// Browser plumbing for the web console's end-to-end tests: Debian's Chromium driven by playwright-core, one fresh
// context per actor, a screenshot of every page visited, and a record of every request and console answer so a test
// can prove the pages load nothing from elsewhere and always carry a strict content security policy. Also an
// authenticator for an admin whose TOTP secret the test knows, handing out codes the account has not used yet.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { totpCodeAt } from '@ark/control-plane/domain/accounts/totp';
import { type Browser, type BrowserContext, chromium, type Page, type Response } from 'playwright-core';
import { expect } from 'vitest';
import { api, type ControlPlane, controlPlaneCli, repoRoot } from './host-side-helpers.js';
import { PASSWORD, signInEnrollingTotp } from './payout-helpers.js';

export const CHROMIUM_PATH = process.env.ARK_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const screenshotDir = join(repoRoot, 'test', 'artifacts', 'console');

/** One headless Chromium for a test file (we run as root, hence no sandbox). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'] });
}

/** One HTML answer of the console, with the policy it carried. */
export interface ConsoleAnswer {
  url: string;
  status: number;
  contentSecurityPolicy: string | null;
}

export interface ActorOptions {
  javaScriptEnabled?: boolean;
  viewport?: { width: number; height: number };
}

/**
 * The browser side of one store's run: contexts for its actors, numbered screenshots `<store>-<nn>-<page>.png`, every
 * request URL, every HTML answer under /console, and what the pages complained about (CSP violations, script errors).
 */
export class ConsoleBrowser {
  readonly requests: string[] = [];
  readonly pageProblems: string[] = [];
  private readonly answers: Array<Promise<ConsoleAnswer | null>> = [];
  private readonly contexts: BrowserContext[] = [];
  private shots = 0;

  constructor(
    private readonly browser: Browser,
    readonly cp: Pick<ControlPlane, 'base'>,
    private readonly store: string,
    /** Where the screenshots go (git-ignored under test/artifacts/). */
    readonly dir: string = screenshotDir,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  /** A fresh context (its own cookies) and a page in it, every request and answer recorded. */
  async actor(options: ActorOptions = {}): Promise<Page> {
    const context = await this.browser.newContext({
      baseURL: this.cp.base,
      javaScriptEnabled: options.javaScriptEnabled ?? true,
      viewport: options.viewport ?? { width: 1280, height: 900 },
    });
    this.contexts.push(context);
    context.on('request', (request) => this.requests.push(request.url()));
    context.on('response', (response) => this.answers.push(consoleAnswer(this.cp.base, response)));
    context.on('console', (message) => {
      if (/content security policy/i.test(message.text())) this.pageProblems.push(`CSP: ${message.text()}`);
    });
    context.on('weberror', (error) => this.pageProblems.push(`script error: ${error.error().message}`));
    return context.newPage();
  }

  /** The HTML answers seen so far under /console. */
  async consoleAnswers(): Promise<ConsoleAnswer[]> {
    return (await Promise.all(this.answers)).filter((answer): answer is ConsoleAnswer => answer !== null);
  }

  async screenshot(page: Page, name: string): Promise<string> {
    this.shots += 1;
    const slug = name
      .replace(/[^a-z0-9]+/gi, '-')
      .replace(/^-|-$/g, '')
      .toLowerCase();
    const path = join(this.dir, `${this.store}-${String(this.shots).padStart(2, '0')}-${slug}.png`);
    await page.screenshot({ path, fullPage: true });
    return path;
  }

  /** The page lays out at its viewport's width: nothing wider than the window (no horizontal scrolling). */
  async expectNoHorizontalOverflow(page: Page, what: string): Promise<void> {
    // Run in the page (a string: this package compiles without the DOM's types).
    const { scrollWidth, innerWidth, wide } = (await page.evaluate(`(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      // What sticks out, for the message: the first few elements whose right edge passes the window.
      wide: [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 4)
        .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ').join('.') : '')),
    }))()`)) as { scrollWidth: number; innerWidth: number; wide: string[] };
    expect(scrollWidth, `${what}: document ${scrollWidth} px wide in a ${innerWidth} px window (${wide.join(', ')})`).toBeLessThanOrEqual(
      innerWidth,
    );
  }

  /** Opens a console path, checks the page has its `main h1`, and takes its screenshot. */
  async visit(page: Page, path: string, name: string): Promise<Response | null> {
    const response = await page.goto(path);
    expect(response?.status(), `GET ${path}`).toBe(200);
    await expect.poll(() => page.locator('main h1').count(), { message: `main h1 on ${path}` }).toBeGreaterThanOrEqual(1);
    const unprotected = page.locator('form[method="post" i]:not(:has(input[type="hidden"][name="_csrf"]))');
    expect(await unprotected.count(), `forms without a hidden _csrf on ${path}`).toBe(0);
    await this.screenshot(page, name);
    return response;
  }

  /** Signs in through form#login; answers the POST's own answer (303 to /console expected). */
  async signIn(page: Page, email: string, password: string): Promise<Response> {
    await this.visit(page, '/console/login', 'login');
    const form = page.locator('form#login');
    await form.locator('input[name="email"]').fill(email);
    await form.locator('input[name="password"]').fill(password);
    const [posted] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/console/login'),
      form.locator('[type="submit"]').first().click(),
    ]);
    await page.waitForLoadState('load');
    return posted;
  }

  /** Submits a form by its first submit button; answers the POST's own answer once the page has landed. */
  async submitAndLand(page: Page, form: string): Promise<Response> {
    const [posted] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.locator(form).locator('[type="submit"]').first().click(),
    ]);
    await page.waitForLoadState('load');
    return posted;
  }

  /** Submits a form by one of its submit buttons; waits for the redirect to land and for its flash message. */
  async submit(page: Page, form: string, options: { button?: string; shot: string }): Promise<{ kind: 'ok' | 'error'; text: string }> {
    const button = page
      .locator(form)
      .locator(options.button ?? '[type="submit"]')
      .first();
    await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), button.click()]);
    await page.waitForLoadState('load');
    const flash = page.locator('.flash.ok, .flash.error').first();
    await flash.waitFor({ timeout: 15_000 });
    const kind = (await flash.getAttribute('class'))?.split(/\s+/).includes('ok') ? 'ok' : 'error';
    const text = (await flash.textContent())?.trim() ?? '';
    await this.screenshot(page, options.shot);
    return { kind, text };
  }

  async close(): Promise<void> {
    await Promise.all(this.contexts.map((context) => context.close().catch(() => {})));
  }
}

async function consoleAnswer(base: string, response: Response): Promise<ConsoleAnswer | null> {
  const url = new URL(response.url());
  if (url.origin !== base || !url.pathname.startsWith('/console')) return null;
  const type = (await response.headerValue('content-type').catch(() => null)) ?? '';
  if (!type.includes('text/html')) return null;
  return {
    url: response.url(),
    status: response.status(),
    contentSecurityPolicy: await response.headerValue('content-security-policy').catch(() => null),
  };
}

const PERIOD_MS = 30_000;
const stepAt = (ms: number) => Math.floor(ms / PERIOD_MS);

/**
 * The admin's authenticator app. The control plane accepts a code of the current period or one either side, and never
 * a period at or before the last one used, so each code handed out is of a fresh period; a previous period's code
 * only while more than 15 s of the current one remain, so a code is still good when the form reaches the server.
 */
export class Authenticator {
  constructor(
    readonly secret: string,
    private lastStep: number,
  ) {}

  async nextCode(): Promise<string> {
    for (;;) {
      const now = Date.now();
      const current = stepAt(now);
      const remainingMs = (current + 1) * PERIOD_MS - now;
      const candidates = remainingMs > 15_000 ? [current - 1, current, current + 1] : [current, current + 1];
      const step = candidates.find((candidate) => candidate > this.lastStep);
      if (step !== undefined) {
        this.lastStep = step;
        return totpCodeAt(this.secret, new Date(step * PERIOD_MS + 1_000));
      }
      await new Promise((resolve) => setTimeout(resolve, remainingMs + 50));
    }
  }
}

/**
 * An admin account made with the CLI, signed in over HTTP, with TOTP enrolled (the test keeps the secret). Answers
 * its API session token (admin reads need no step-up) and its authenticator.
 */
export async function adminWithTotp(cp: ControlPlane, email: string): Promise<{ token: string; authenticator: Authenticator }> {
  await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'admin', '--password', PASSWORD, '--verified']);
  const { token, secret } = await signInEnrollingTotp(cp, email);
  // Enrollment spends a period: the previous one while it is safely valid, so the console gets the next ones at once.
  const authenticator = new Authenticator(secret, Number.NEGATIVE_INFINITY);
  const code = await authenticator.nextCode();
  const confirmed = await api(cp.base, 'POST', '/api/v1/account/totp/confirm', { token, body: { totp_code: code } });
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  return { token, authenticator };
}

/** An RFC 3339 timestamp without milliseconds, as a person would type it. */
export const rfc3339 = (at: Date): string => at.toISOString().replace(/\.\d{3}Z$/, 'Z');
