// The `ark` CLI over the real-parts rental of the harness (rental-helpers.ts: a private dockerd, the job image by
// digest from a loopback registry, `ark-cp serve`, a paired `ark-agent run`), one rental per store. The renter finds
// the offer, quotes, runs `ark jobs create` (quote + reserve + wait for RUNNING from the job's events), opens the job
// with the system ssh and sftp through `ark ssh`/`ark sftp` (host key pinned to the access endpoint's fingerprint),
// extends, reads events and stops; the host lists its machine, changes its offer and maintenance windows, reads
// telemetry, queues a network test, and sees its earnings and the market. Only `ark`'s --json output and exit codes
// are read, beside the ledger's own answer (`ark-cp`) for the host's pending and payable amounts.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_MODEL, engineTemplate } from '../engine/image.js';
import { isDockerAvailable } from '../harness/dockerd.js';
import type { TestImage } from '../harness/images.js';
import { freePort } from '../harness/processes.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';
import { engineImageIn } from './relay-helpers.js';
import { DIALECTS, type DockerWorld, MACHINE_RATE_MICRO_PER_HOUR, RentalSite, startDockerWorld } from './rental-helpers.js';

describe.skipIf(!isDockerAvailable())('the ark CLI over a real rental', () => {
  let world: DockerWorld;
  /** The test engine's image (test/engine), built once for both stores when the chat test first needs it. */
  let engine: Promise<TestImage> | undefined;

  beforeAll(async () => {
    world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    let renter: NodeJS.ProcessEnv;
    let host: NodeJS.ProcessEnv;
    let keyDir: string;
    let jobId = '';

    beforeAll(async () => {
      // A retrieval window long enough for a few CLI starts on a busy machine.
      site = await RentalSite.start(dialect, world, { cpEnv: { ARK_RETRIEVAL_WINDOW_S: '30' } });
      const hostKey = (await site.cli(['keys', 'create', '--email', site.hostEmail, '--scopes', 'host', '--label', 'cli e2e']))
        .secret as string;
      renter = { ARK_URL: site.cp.base, ARK_API_KEY: site.renterKey, ARK_CONFIG_DIR: arkConfigDir() };
      host = { ARK_URL: site.cp.base, ARK_API_KEY: hostKey, ARK_CONFIG_DIR: arkConfigDir() };
      keyDir = mkdtempSync(join(tmpdir(), 'ark-cli-ssh-'));
      writeFileSync(join(keyDir, 'id_ed25519'), site.ssh.privateKey, { mode: 0o600 });
      writeFileSync(join(keyDir, 'id_ed25519.pub'), `${site.ssh.publicKey}\n`);
    }, 180_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    it('offers search, quote, jobs create waits for RUNNING with progress, ssh and sftp with the pinned host key, extend, events, stop', {
      timeout: 240_000,
    }, async () => {
      const search = expectExit(await ark(['offers', 'search', '--sort', 'price', '--json'], { env: renter }), 0);
      const offer = search.json.items.find((o: any) => o.offer_id === site.offerId);
      expect(offer).toMatchObject({ machine_id: site.machineId, readiness: 'ready' });
      // A price ceiling below the offer's total rate leaves it out; the filter is the API's own.
      const cheap = expectExit(await ark(['offers', 'search', '--max-price', '0.5', '--json'], { env: renter }), 0);
      expect(cheap.json.items.some((o: any) => o.offer_id === site.offerId)).toBe(false);

      const image = site.world.image.digestRef;
      const quote = expectExit(
        await ark(['quote', site.offerId, '--image', image, '--duration', '10m', '--budget', '3', '--json'], { env: renter }),
        0,
      );
      expect(quote.json).toMatchObject({
        machine_id: site.machineId,
        machine_rate_micro_per_hour: MACHINE_RATE_MICRO_PER_HOUR.toString(),
        budget_micro: '3000000',
        duration_limit_s: 600,
      });

      const created = expectExit(
        await ark(
          [
            'jobs',
            'create',
            site.offerId,
            '--image',
            image,
            '--duration',
            '10m',
            '--budget',
            '3',
            '--ssh-key',
            join(keyDir, 'id_ed25519.pub'),
            '--json',
          ],
          { env: renter, timeoutMs: 150_000 },
        ),
        0,
      );
      jobId = created.json.job.job_id;
      expect(created.json.job).toMatchObject({ state: 'RUNNING', machine_id: site.machineId });
      expect(created.json.quote.budget_micro).toBe('3000000');
      // Off a terminal, progress is plain lines on stderr, from the job's events; stdout holds only the JSON result.
      expect(created.stderr).toMatch(/^state: RUNNING$/m);
      expect(created.stderr).toMatch(/^state_changed: /m);
      const human = expectExit(await ark(['jobs', 'show', jobId], { env: renter }), 0);
      expect(human.stdout).toMatch(/state\s*│ RUNNING/);

      // ssh: the system client, no prompt (stdin is not a terminal, so a trust-on-first-use question would fail it).
      const identity = join(keyDir, 'id_ed25519');
      const shell = expectExit(
        await ark(['ssh', jobId, '-i', identity, '--', 'echo', 'hello-from-$(hostname)', '&&', 'pwd'], { env: renter }),
        0,
      );
      expect(shell.stdout).toMatch(/hello-from-/);
      expect(shell.stdout).toContain('/workspace');
      // ssh's own exit code comes back.
      expect((await ark(['ssh', jobId, '-i', identity, '--', 'exit', '7'], { env: renter })).code).toBe(7);
      const printed = expectExit(await ark(['ssh', jobId, '-i', identity, '--print', '--json'], { env: renter }), 0);
      expect(printed.json.args).toEqual(expect.arrayContaining(['StrictHostKeyChecking=yes', `HostKeyAlias=ark-job-${jobId}`]));

      // A result file, written over ssh, to fetch with sftp in the retrieval window after the stop.
      expectExit(await ark(['ssh', jobId, '-i', identity, '--', 'echo sent-over-ssh > /workspace/result.txt'], { env: renter }), 0);

      const listed = expectExit(await ark(['jobs', 'list', '--state', 'running', '--json'], { env: renter }), 0);
      expect(listed.json.items.map((j: any) => j.job_id)).toContain(jobId);
      const extended = expectExit(await ark(['jobs', 'extend', jobId, '--add', '1', '--duration', '20m', '--json'], { env: renter }), 0);
      expect(extended.json).toMatchObject({ job_id: jobId, funded_budget_micro: '4000000', new_duration_limit_s: 1200 });
      const shown = expectExit(await ark(['jobs', 'show', jobId, '--json'], { env: renter }), 0);
      expect(shown.json.budget_version).toBe(extended.json.budget_version);

      // stop --wait returns once the machine confirmed (STOPPED), not after the retrieval window: the unspent budget is
      // back in the balance by then (issue 22).
      const stopAskedAt = Date.now();
      const stopped = expectExit(await ark(['jobs', 'stop', jobId, '--wait', '--json'], { env: renter, timeoutMs: 60_000 }), 0);
      expect(Date.now() - stopAskedAt).toBeLessThan(25_000);
      expect(stopped.json).toMatchObject({ job_id: jobId, state: 'STOPPED' });
      expect(BigInt(stopped.json.cumulative_charge_micro)).toBeGreaterThan(0n);
      const balance = expectExit(await ark(['balance', '--json'], { env: renter }), 0);
      expect(balance.json).toMatchObject({
        available_micro: (site.creditMicro - BigInt(stopped.json.cumulative_charge_micro)).toString(),
        held_micro: '0',
      });
      // sftp in batch mode in the read-only retrieval window: the file comes back, host key pinned as for ssh.
      const batch = join(keyDir, 'batch.txt');
      const local = join(keyDir, 'result.txt');
      writeFileSync(batch, `get /result.txt ${local}\n`);
      expectExit(await ark(['sftp', jobId, '-i', identity, '--', '-b', batch], { env: renter }), 0);
      expect(readFileSync(local, 'utf8')).toBe('sent-over-ssh\n');
      // Repeating the stop is idempotent and answers at once.
      const again = expectExit(await ark(['jobs', 'stop', jobId, '--wait', '--json'], { env: renter }), 0);
      expect(['STOPPED', 'CLEANING', 'CLOSED']).toContain(again.json.state);
      expect(again.json.cumulative_charge_micro).toBe(stopped.json.cumulative_charge_micro);
      // Followed events end by themselves once the job is closed (the window ends): NDJSON, in sequence, through the close.
      const followed = expectExit(await ark(['jobs', 'events', jobId, '--follow', '--json'], { env: renter, timeoutMs: 150_000 }), 0);
      const events = followed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b));
      expect(events.some((e) => e.kind === 'state_changed' && e.data.to === 'RUNNING')).toBe(true);
      expect(events.some((e) => e.kind === 'state_changed' && e.data.to === 'CLOSED')).toBe(true);
      // The hold went back once, before the window: at STOPPED.
      const released = events.filter((e) => e.kind === 'hold_released');
      expect(released).toHaveLength(1);
      expect(released[0].seq).toBeLessThan(events.find((e) => e.kind === 'state_changed' && e.data.to === 'CLEANING').seq);
      // Access after the retrieval window is refused: the API's 403 is exit 3, before ssh is started.
      expectExit(await ark(['ssh', jobId, '-i', identity, '--', 'true'], { env: renter }), 3);
    });

    it('host: machines list and show, offer set and maintenance windows, telemetry, nettest, earnings, market', {
      timeout: 180_000,
    }, async () => {
      const machines = expectExit(await ark(['machines', 'list', '--json'], { env: host }), 0);
      expect(machines.json.items).toEqual([expect.objectContaining({ machine_id: site.machineId, live: 'live', liveness: 'online' })]);
      const before = expectExit(await ark(['machines', 'show', site.machineId, '--json'], { env: host }), 0);
      const version = BigInt(before.json.offer.offer_version);

      const set = expectExit(
        await ark(['offer', 'set', site.machineId, '--rate', '40', '--disk-gib', '20', '--until', '+20d', '--json'], { env: host }),
        0,
      );
      expect(BigInt(set.json.offer_version)).toBe(version + 1n);
      const added = expectExit(
        await ark(
          ['offer', 'maintenance', 'add', site.machineId, '--start', '+1d', '--end', '+26h', '--reason', 'driver upgrade', '--json'],
          { env: host },
        ),
        0,
      );
      expect(added.json.offer.maintenance_windows).toEqual([expect.objectContaining({ reason: 'driver upgrade' })]);
      const after = expectExit(await ark(['machines', 'show', site.machineId, '--json'], { env: host }), 0);
      expect(after.json.offer).toMatchObject({ rate_micro_per_hour: '40000000', included_quotas: { included_disk_gib: 20 } });
      expect(after.json.offer.maintenance_windows).toHaveLength(1);
      const removed = expectExit(await ark(['offer', 'maintenance', 'remove', site.machineId, '0', '--json'], { env: host }), 0);
      expect(removed.json.offer.maintenance_windows).toEqual([]);
      // A renter sees the new total rate (the platform fee on top of 40 USDC/h).
      const seen = expectExit(await ark(['offers', 'search', '--json'], { env: renter }), 0);
      expect(BigInt(seen.json.items.find((o: any) => o.machine_id === site.machineId).total_rate_micro_per_hour)).toBeGreaterThanOrEqual(
        40_000_000n,
      );

      const telemetry = expectExit(await ark(['telemetry', site.machineId, '--window', '1h', '--json'], { env: host }), 0);
      expect(telemetry.json).toMatchObject({ machine_id: site.machineId, window_s: 3600, bucket_s: 300 });
      const table = expectExit(await ark(['telemetry', site.machineId, '--window', '1h'], { env: host }), 0);
      expect(table.stdout).toMatch(/buckets of 300 s over 3600 s/);
      // Telemetry is the host's: to a renter who does not own the machine it does not exist (404, exit 4, never 403:
      // http/owner-first.ts), so which machine ids exist never leaks through the scope refusal.
      const stranger = expectExit(await ark(['telemetry', site.machineId, '--json'], { env: renter }), 4);
      expect(stranger.json.error.code).toBe('NOT_FOUND');

      const nettest = expectExit(await ark(['nettest', site.machineId, '--json'], { env: host }), 0);
      expect(nettest.json).toMatchObject({ machine_id: site.machineId, state: 'QUEUED' });

      // Earnings agree with the ledger's own answer: charged a moment ago, so pending (24 h to maturity), none payable.
      const earnings = expectExit(await ark(['earnings', '--json'], { env: host }), 0);
      const ledger = await site.hostBalances();
      expect(BigInt(earnings.json.pending_micro)).toBe(ledger.pending);
      expect(BigInt(earnings.json.pending_micro)).toBeGreaterThan(0n);
      expect(BigInt(earnings.json.payable_micro)).toBe(ledger.payable);
      expect(earnings.json.next_matures_at).toEqual(expect.any(String));
      const human = expectExit(await ark(['earnings'], { env: host }), 0);
      expect(human.stdout).toMatch(/pending/);
      expect(earnings.json.items.some((i: any) => i.kind === 'job' && i.job_id === jobId)).toBe(true);

      const market = expectExit(await ark(['market', '--json'], { env: host }), 0);
      expect(market.json).toMatchObject({ window_days: 30 });
      expect(Array.isArray(market.json.models)).toBe(true);
      expectExit(await ark(['market', '--window', '0d', '--json'], { env: host }), 2);
      // A payout moves money: without a step-up proof it stops at exit 3 and says how to give one.
      const payout = await ark(['payout', '--amount', '0.01', '--to', '0x000000000000000000000000000000000000dEaD', '--json'], {
        env: host,
      });
      expectExit(payout, 3);
      expect(payout.json.error.code).toBe('STEP_UP_REQUIRED');
    });

    it('chat streams a model job’s answer through the relay', { timeout: 240_000 }, async () => {
      engine ??= engineImageIn(world);
      const image = await engine;
      // The operator's part (ark-cp): a model template on the engine image, qualified for this machine.
      const file = join(keyDir, 'templates.json');
      writeFileSync(file, JSON.stringify([engineTemplate(image, await freePort(), `cli-chat-${randomUUID().slice(0, 8)}`, 10)]));
      const imported = await site.cli(['templates', 'import', '--file', file]);
      const templateId = (imported.items?.[0]?.template_id ?? imported.templates?.[0]?.template_id) as string;
      await site.cli(['templates', 'qualify', '--template', templateId, '--machine', site.machineId, '--reason', 'cli e2e']);
      const listed = expectExit(await ark(['templates', 'list', '--kind', 'model', '--json'], { env: renter }), 0);
      expect(listed.json.items.map((t: any) => t.template_id)).toContain(templateId);

      const created = expectExit(
        await ark(
          [
            'jobs',
            'create',
            site.offerId,
            '--template',
            templateId,
            '--duration',
            '10m',
            '--budget',
            '5',
            '--ssh-key',
            join(keyDir, 'id_ed25519.pub'),
            '--json',
          ],
          { env: renter, timeoutMs: 150_000 },
        ),
        0,
      );
      const modelJob = created.json.job.job_id as string;
      const chat = expectExit(await ark(['chat', modelJob, '--max-tokens', '6', '--json', 'say', 'hello'], { env: renter }), 0);
      expect(chat.json).toMatchObject({ job_id: modelJob, model: ENGINE_MODEL });
      expect(chat.json.content.length).toBeGreaterThan(0);
      expect(chat.json.chunks).toBeGreaterThanOrEqual(6);
      // Without --json the tokens are written as they arrive: the same deterministic answer.
      const human = expectExit(await ark(['chat', modelJob, '--max-tokens', '6', 'say', 'hello'], { env: renter }), 0);
      expect(human.stdout.trim()).toBe(chat.json.content.trim());
      expect(expectExit(await ark(['jobs', 'stop', modelJob, '--json'], { env: renter }), 0).json.job_id).toBe(modelJob);
    });
  });
});
