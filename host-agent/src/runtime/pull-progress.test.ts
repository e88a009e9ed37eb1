import { describe, expect, it } from 'vitest';
import { PullProgressTracker } from './pull-progress.js';

describe('PullProgressTracker', () => {
  it('counts download and extraction of every layer, as Docker reports them', () => {
    const tracker = new PullProgressTracker();
    expect(tracker.apply({ status: 'Pulling from ark/engine', id: 'sha256:ab' })).toBe(0);
    expect(tracker.apply({ status: 'Pulling fs layer', id: 'aaaaaaaaaaaa' })).toBe(0);
    expect(tracker.apply({ status: 'Pulling fs layer', id: 'bbbbbbbbbbbb' })).toBe(0);
    // Layer a half downloaded: a quarter of its share.
    expect(tracker.apply({ status: 'Downloading', id: 'aaaaaaaaaaaa', progressDetail: { current: 50, total: 100 } })).toBe(12);
    expect(tracker.apply({ status: 'Download complete', id: 'aaaaaaaaaaaa' })).toBe(25);
    expect(tracker.apply({ status: 'Extracting', id: 'aaaaaaaaaaaa', progressDetail: { current: 100, total: 100 } })).toBe(50);
    expect(tracker.apply({ status: 'Already exists', id: 'bbbbbbbbbbbb' })).toBe(100);
    expect(tracker.apply({ status: 'Pull complete', id: 'aaaaaaaaaaaa' })).toBe(100);
    expect(tracker.apply({ status: 'Digest: sha256:...' })).toBe(100);
  });

  it('never goes backwards and ignores malformed progress', () => {
    const tracker = new PullProgressTracker();
    tracker.apply({ status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 80, total: 100 } });
    expect(tracker.apply({ status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 10, total: 100 } })).toBe(40);
    expect(tracker.apply({ status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 10, total: 0 } })).toBe(40);
    expect(tracker.apply({ status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 500, total: 100 } })).toBe(50);
  });
});
