import { withdrawalAddresses } from './money-out.js';
import { usd, usdToMicro } from './format.js';
import { type ConsoleScope, action, field, FormError, page, perform, render, type Signed, signedIn } from './session.js';

const TERMINAL = new Set(['CLOSED', 'FAILED']);
const ACCESSIBLE = new Set(['RUNNING', 'STOPPED', 'CLEANING']);
const ENDED = new Set(['STOPPED', 'CLEANING', 'CLOSED', 'FAILED']);

async function balanceOf(who: Signed): Promise<unknown> {
  const answer = await who.api.call('GET', '/api/v1/billing/balance?limit=1');
  return answer.status === 200 ? answer.body : null;
}

/** A renter's jobs with their events and charges, the balance and deposits. */
export function registerRenterPages(c: ConsoleScope): void {
  page(c, '/jobs', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const jobs = await who.api.call('GET', '/api/v1/jobs?limit=100');
    return render(request, reply, 'jobs', {
      title: 'Jobs',
      account: who.account,
      jobs: jobs.status === 200 ? jobs.body.items : [],
      refused: jobs.status === 200 ? null : jobs.body?.error?.message,
    });
  });

  page<{ id: string }>(c, '/jobs/:id', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    const job = await who.api.get(`/api/v1/jobs/${id}`);
    // The newest events: walk the pages to the end (a job has a bounded number of them).
    const events: unknown[] = [];
    await who.api.walk(`/api/v1/jobs/${id}/events?limit=100`, (items) => {
      events.push(...items);
      return true;
    });
    const partial = request.headers['hx-request'] === 'true' && request.query.part === 'job';
    // The page's forms and logs depend on the state: when it changed since the page was drawn, htmx reloads the page.
    if (partial && typeof request.query.shown === 'string' && request.query.shown !== job.state) reply.header('hx-refresh', 'true');
    // How to reach it, once it runs (and read-only in the retrieval window after a stop).
    const access = ACCESSIBLE.has(job.state) ? await who.api.call('GET', `/api/v1/jobs/${id}/access`) : null;
    return render(request, reply, partial ? 'job-live' : 'job', {
      title: `Job ${job.job_id.slice(0, 8)}`,
      account: who.account,
      job,
      events: events.slice(-200).reverse(),
      live: !TERMINAL.has(job.state),
      stoppable: ['RESERVED', 'STARTING', 'RUNNING'].includes(job.state),
      extendable: ['RESERVED', 'STARTING', 'RUNNING'].includes(job.state),
      access: access?.status === 200 ? access.body : null,
      // Once the machine confirmed the stop, what the budget did not spend is back in the balance.
      unspent: ENDED.has(job.state) ? (BigInt(job.funded_budget_micro) - BigInt(job.cumulative_charge_micro)).toString() : null,
      balance: ENDED.has(job.state) ? await balanceOf(who) : null,
    });
  });

  // The job's logs, live (issue 25 item 2): a fragment of new lines after a cursor, polled by the job page; each answer
  // carries the next poll. The public API's one-off read, in process, with the person's own session.
  page<{ id: string }>(c, '/jobs/:id/logs', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    const cursor =
      typeof request.query.cursor === 'string' && /^(0|[1-9][0-9]{0,15})$/.test(request.query.cursor) ? request.query.cursor : null;
    const logs = await who.api.call('GET', `/api/v1/jobs/${id}/logs?${cursor === null ? 'tail=200' : `tail=1000&cursor=${cursor}`}`);
    if (logs.status === 404) return reply.code(404).send();
    const ok = logs.status === 200;
    return render(request, reply, 'job-logs', {
      title: 'Logs',
      account: who.account,
      jobId: request.params.id,
      lines: ok ? logs.body.lines : [],
      // Keep polling while the lines can come (a machine out of reach for a moment too); not once they are gone.
      next: ok ? (logs.body.cursor ?? '0') : logs.status === 503 ? (cursor ?? '0') : null,
      // Said once: on the first load, or when the lines are gone for good (not at every poll while the machine is away).
      problem:
        ok || (cursor !== null && logs.status === 503) ? null : (logs.body?.error?.message ?? `The service answered ${logs.status}.`),
      first: cursor === null,
    });
  });

  action<{ id: string }>(c, '/jobs/:id/stop', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, `/console/jobs/${id}`, async () => {
      const stopped = await who.api.post(`/api/v1/jobs/${id}/stop`, { reason: field(request.body, 'reason', 'The reason') });
      return `Stopping: the job is ${stopped.state}. You pay for what ran; the unspent budget comes back once the machine confirms the stop.`;
    });
  });

  // More budget and a longer limit (POST /api/v1/jobs/{id}/budget-extension), against the versions the page showed.
  action<{ id: string }>(c, '/jobs/:id/extend', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, `/console/jobs/${id}`, async () => {
      const add = usdToMicro(field(request.body, 'add_usd', 'The amount to add'));
      if (add === null || add < 1n) throw new FormError('The amount to add is in USD, e.g. 5 or 2.50.');
      const minutes = field(request.body, 'duration_min', 'The new duration');
      if (!/^[0-9]{1,7}$/.test(minutes) || Number(minutes) < 1) throw new FormError('The new duration is a whole number of minutes.');
      const extended = await who.api.post(`/api/v1/jobs/${id}/budget-extension`, {
        additional_budget_micro: add.toString(),
        new_duration_limit_s: Number(minutes) * 60,
        expected_job_version: field(request.body, 'job_version', 'The job version'),
        expected_budget_version: field(request.body, 'budget_version', 'The budget version'),
      });
      return `Extended: the job is funded with ${usd(extended.funded_budget_micro)} for up to ${minutes} min.`;
    });
  });

  page(c, '/balance', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const balance = await who.api.call('GET', '/api/v1/billing/balance?limit=20');
    const address = await who.api.call('GET', '/api/v1/billing/deposit-address');
    const withdrawals = await who.api.call('GET', '/api/v1/withdrawals?limit=20');
    return render(request, reply, 'balance', {
      title: 'Balance',
      account: who.account,
      balance: balance.status === 200 ? balance.body : null,
      refused: balance.status === 200 ? null : balance.body?.error?.message,
      address: address.status === 200 ? address.body : null,
      addressRefused: address.status === 200 ? null : address.body?.error?.message,
      withdrawals: withdrawals.status === 200 ? withdrawals.body.items : [],
      addresses: await withdrawalAddresses(who),
    });
  });
}
