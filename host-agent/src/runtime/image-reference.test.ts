import { describe, expect, it } from 'vitest';
import { canonicalRepository, formatDigestReference, parseDigestReference, repoDigestsMatch } from './image-reference.js';

const digest = `sha256:${'ab'.repeat(32)}`;
const other = `sha256:${'cd'.repeat(32)}`;

describe('parseDigestReference', () => {
  it('reads repositories with registries, ports and paths', () => {
    expect(parseDigestReference(`127.0.0.1:5000/ark-test/busybox@${digest}`)).toEqual({
      repository: '127.0.0.1:5000/ark-test/busybox',
      digest,
    });
    expect(parseDigestReference(`vllm/vllm-openai@${digest}`)).toEqual({ repository: 'vllm/vllm-openai', digest });
    expect(parseDigestReference(`ubuntu@${digest}`)).toEqual({ repository: 'ubuntu', digest });
  });

  it('drops a tag written beside the digest', () => {
    const parsed = parseDigestReference(`registry.example.com:443/team/engine:v1@${digest}`);
    expect(parsed).toEqual({ repository: 'registry.example.com:443/team/engine', digest });
    expect(formatDigestReference(parsed as NonNullable<typeof parsed>)).toBe(`registry.example.com:443/team/engine@${digest}`);
  });

  it('refuses anything not named by a sha256 digest', () => {
    for (const reference of [
      'ubuntu',
      'ubuntu:22.04',
      `ubuntu@sha256:${'ab'.repeat(31)}`,
      `ubuntu@sha512:${'ab'.repeat(64)}`,
      `UBUNTU@${digest}`,
      `@${digest}`,
      `a//b@${digest}`,
      `x@${digest.toUpperCase()}`,
    ]) {
      expect(parseDigestReference(reference), reference).toBeUndefined();
    }
    expect(parseDigestReference(`${'a'.repeat(600)}@${digest}`)).toBeUndefined();
  });
});

describe('repoDigestsMatch', () => {
  it('matches the same repository and digest, Docker Hub names in either form', () => {
    expect(canonicalRepository('ubuntu')).toBe('docker.io/library/ubuntu');
    expect(canonicalRepository('docker.io/library/ubuntu')).toBe('docker.io/library/ubuntu');
    expect(canonicalRepository('index.docker.io/vllm/vllm-openai')).toBe('docker.io/vllm/vllm-openai');
    expect(canonicalRepository('localhost/x')).toBe('localhost/x');
    expect(repoDigestsMatch({ repository: 'docker.io/library/ubuntu', digest }, [`ubuntu@${digest}`])).toBe(true);
    expect(repoDigestsMatch({ repository: '127.0.0.1:5000/a/b', digest }, [`127.0.0.1:5000/a/b@${digest}`])).toBe(true);
  });

  it('refuses another digest, or the digest under another repository', () => {
    expect(repoDigestsMatch({ repository: 'ubuntu', digest }, [`ubuntu@${other}`])).toBe(false);
    expect(repoDigestsMatch({ repository: 'ubuntu', digest }, [`debian@${digest}`])).toBe(false);
    expect(repoDigestsMatch({ repository: 'ubuntu', digest }, [])).toBe(false);
    expect(repoDigestsMatch({ repository: 'ubuntu', digest }, ['garbage'])).toBe(false);
  });
});
