import type { Clock } from '../../clock.js';

// Alerts leave the control plane through one sink: a JSON POST to ARK_ALERT_WEBHOOK_URL (any receiver an operator
// runs: a chat webhook bridge, an incident tool, a script). Without one they are logged only.

export type AlertSeverity = 'info' | 'warning' | 'critical';

export interface Alert {
  /** A stable name a receiver can route on, e.g. `chain_finality_stalled`. */
  name: string;
  severity: AlertSeverity;
  summary: string;
  /** Facts for the reader; never secrets. */
  details?: Record<string, unknown>;
}

/** What became of one delivery: the receiver's status, or why it did not take it. */
export type AlertDelivery = { delivered: true; status: number } | { delivered: false; detail: string };

export interface AlertSink {
  /** Where alerts go, as an operator may read it (scheme, host and path; never a query string or credentials). */
  readonly target: string | null;
  send(alert: Alert): Promise<AlertDelivery>;
}

/** A receiver gets this long to answer; a slow one never holds up the caller's work for longer. */
const DELIVERY_TIMEOUT_MS = 5_000;
/** Longest piece of a receiver's answer quoted back in a failure. */
const ANSWER_EXCERPT_MAX = 200;

/** The JSON body every receiver gets. */
export function alertBody(alert: Alert, at: Date): Record<string, unknown> {
  return {
    source: 'ark-control-plane',
    at: at.toISOString(),
    alert: alert.name,
    severity: alert.severity,
    summary: alert.summary,
    details: alert.details ?? {},
  };
}

/** A URL without its query string and fragment: tokens often ride there. */
export function redactedTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** The webhook sink; with no URL every send answers undelivered (the caller logs the alert itself). */
export function webhookAlertSink(input: { url: string | null; clock: Clock; timeoutMs?: number }): AlertSink {
  const { url } = input;
  const timeoutMs = input.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  return {
    target: url === null ? null : redactedTarget(url),
    async send(alert) {
      if (url === null) return { delivered: false, detail: 'no alert sink is configured (ARK_ALERT_WEBHOOK_URL is not set)' };
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'ark-control-plane' },
          body: JSON.stringify(alertBody(alert, input.clock.now())),
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text().catch(() => '');
        if (response.status >= 200 && response.status < 300) return { delivered: true, status: response.status };
        const excerpt = text.slice(0, ANSWER_EXCERPT_MAX).replace(/\s+/g, ' ').trim();
        return { delivered: false, detail: `the alert sink answered HTTP ${response.status}${excerpt ? `: ${excerpt}` : ''}` };
      } catch (error) {
        return { delivered: false, detail: `the alert sink could not be reached: ${describeFetchError(error, timeoutMs)}` };
      }
    },
  };
}

/** A fetch failure in words: the cause's code (ECONNREFUSED, ENOTFOUND...) or the timeout. */
export function describeFetchError(error: unknown, timeoutMs: number): string {
  const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = err?.cause;
  if (cause?.code) return cause.code;
  return cause?.message ?? err?.message ?? String(error);
}
