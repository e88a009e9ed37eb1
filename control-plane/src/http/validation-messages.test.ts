// What a person reads when a value has the wrong shape: a sentence with an example, not the regular expression the
// schema holds (a UUID in a path, an image given by tag instead of by digest).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';

describe('validation messages', () => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    renter = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('says a path id must be a UUID, with one, instead of printing the pattern', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/jobs/not-a-job', headers: bearer(renter.apiKey) });
    expect(res.statusCode).toBe(422);
    const { error } = res.json();
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toMatch(/^params\/id must be a UUID, such as [0-9a-f-]{36}$/);
    expect(error.message).not.toContain('^[0-9a-fA-F]');
  });

  it('says an image must be pinned by digest and how to get the digest of a tag', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/quotes',
      headers: bearer(renter.apiKey),
      payload: { offer_id: '3f2c9a4e-8b1d-4c7e-9f0a-5d6e7b8c9d0e', gpu_count: 1, duration_limit_s: 3600, image_digest: 'nginx:1.27' },
    });
    expect(res.statusCode).toBe(422);
    const { error } = res.json();
    expect(error.message).toContain('must be an image pinned by digest');
    expect(error.message).toContain('ark images resolve');
    expect(error.message).not.toContain('sha256:[0-9a-f]');
  });
});
