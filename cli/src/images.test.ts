import { describe, expect, it } from 'vitest';
import { ImageReferenceError, parseBearerChallenge, parseImageReference, registryBase } from './images.js';

describe('image references, as Docker reads them', () => {
  it('puts a bare name on Docker Hub under library/ with the tag latest', () => {
    expect(parseImageReference('nginx')).toEqual({ registry: 'docker.io', repository: 'library/nginx', reference: 'latest' });
    expect(parseImageReference('pytorch/pytorch:2.5.1-cuda12.4')).toEqual({
      registry: 'docker.io',
      repository: 'pytorch/pytorch',
      reference: '2.5.1-cuda12.4',
    });
  });

  it('reads a first part with a dot, a port or localhost as the registry', () => {
    expect(parseImageReference('ghcr.io/org/app:1.2')).toEqual({ registry: 'ghcr.io', repository: 'org/app', reference: '1.2' });
    expect(parseImageReference('127.0.0.1:5000/team/x')).toEqual({ registry: '127.0.0.1:5000', repository: 'team/x', reference: 'latest' });
    expect(parseImageReference('localhost/x:y').registry).toBe('localhost');
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(parseImageReference(`ghcr.io/org/app@${digest}`).reference).toBe(digest);
  });

  it('refuses what no registry could hold', () => {
    for (const bad of ['Upper/Case', 'app@sha256:123', 'app:bad tag', '', 'a//b']) {
      expect(() => parseImageReference(bad), bad).toThrow(ImageReferenceError);
    }
  });

  it('talks https to a registry, http to a loopback one, and Docker Hub at its API host', () => {
    expect(registryBase('docker.io')).toBe('https://registry-1.docker.io');
    expect(registryBase('ghcr.io')).toBe('https://ghcr.io');
    expect(registryBase('127.0.0.1:5000')).toBe('http://127.0.0.1:5000');
    expect(registryBase('registry.lan:5000', true)).toBe('http://registry.lan:5000');
  });

  it('reads a Bearer challenge and ignores other schemes', () => {
    expect(
      parseBearerChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      ),
    ).toEqual({
      realm: 'https://auth.docker.io/token',
      service: 'registry.docker.io',
      scope: 'repository:library/nginx:pull',
    });
    expect(parseBearerChallenge('Basic realm="x"')).toBeUndefined();
    expect(parseBearerChallenge(null)).toBeUndefined();
  });
});
