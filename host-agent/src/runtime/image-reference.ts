// Image references by digest, and the check that a pulled image really is the one named.

export type DigestReference = {
  /** The repository as written, e.g. `127.0.0.1:5000/ark/busybox` or `vllm/vllm-openai`. */
  repository: string;
  /** `sha256:<64 hex>`. */
  digest: string;
};

const digestReferencePattern = /^([a-z0-9][a-z0-9._\-/:]*[a-z0-9])@(sha256:[0-9a-f]{64})$/;

/**
 * Parses `name@sha256:<64 hex>`. A tag beside the digest (`name:tag@sha256:...`) is dropped, as Docker
 * itself ignores it: the digest alone names the image.
 */
export function parseDigestReference(reference: string): DigestReference | undefined {
  if (reference.length > 512) return undefined;
  const match = digestReferencePattern.exec(reference);
  if (match === null) return undefined;
  const [, named = '', digest = ''] = match;
  if (named.includes('//')) return undefined;
  const slash = named.lastIndexOf('/');
  // A colon in the last path segment starts a tag; before it, it separates a registry port.
  const colon = named.indexOf(':', slash + 1);
  const repository = colon < 0 ? named : named.slice(0, colon);
  if (repository === '' || repository.endsWith('/')) return undefined;
  return { repository, digest };
}

/** The reference to pull and run: `repository@digest`, without any tag. */
export function formatDigestReference(reference: DigestReference): string {
  return `${reference.repository}@${reference.digest}`;
}

/**
 * Docker Hub names appear shortened in RepoDigests (`ubuntu@sha256:...` for `docker.io/library/ubuntu`),
 * so both sides are compared in their canonical long form.
 */
export function canonicalRepository(repository: string): string {
  const firstSlash = repository.indexOf('/');
  const first = firstSlash < 0 ? '' : repository.slice(0, firstSlash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  const withRegistry = hasRegistry ? repository : `docker.io/${repository}`;
  const registryEnd = withRegistry.indexOf('/');
  const registry = withRegistry.slice(0, registryEnd) === 'index.docker.io' ? 'docker.io' : withRegistry.slice(0, registryEnd);
  const path = withRegistry.slice(registryEnd + 1);
  return registry === 'docker.io' && !path.includes('/') ? `${registry}/library/${path}` : `${registry}/${path}`;
}

/** True when one of the image's RepoDigests names exactly the requested repository and digest. */
export function repoDigestsMatch(requested: DigestReference, repoDigests: readonly string[]): boolean {
  const wanted = canonicalRepository(requested.repository);
  return repoDigests.some((entry) => {
    const at = entry.lastIndexOf('@');
    if (at < 0) return false;
    return entry.slice(at + 1) === requested.digest && canonicalRepository(entry.slice(0, at)) === wanted;
  });
}
