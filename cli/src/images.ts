import { createHash } from 'node:crypto';

// `ark images resolve REF`: the digest a registry serves for an image tag, so a renter can pin what a tag means
// today (jobs run images by digest only). Registry HTTP API v2: a HEAD of the manifest, with the anonymous bearer
// token flow when the registry answers 401 with a `WWW-Authenticate: Bearer realm=...,service=...,scope=...`
// challenge (Docker Hub, GHCR, most others). Nothing here needs an Ark account.

export interface ImageReference {
  /** The registry host (and port) as named, `docker.io` for Docker Hub. */
  registry: string;
  repository: string;
  /** A tag, or a digest when the reference is already pinned. */
  reference: string;
}

const DOCKER_HUB = 'docker.io';
/** Docker Hub's API host differs from the name people write. */
const DOCKER_HUB_API = 'registry-1.docker.io';
const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const REPOSITORY = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

export class ImageReferenceError extends Error {
  override name = 'ImageReferenceError';
}

/** Parses `name[:tag]` or `name@sha256:...` as Docker does: a first part with a dot, a colon or `localhost` is a registry. */
export function parseImageReference(text: string): ImageReference {
  const input = text.trim();
  let rest = input;
  let reference = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    reference = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(reference)) throw new ImageReferenceError(`${input}: the part after @ must be sha256: and 64 hex digits`);
  } else {
    const lastSlash = rest.lastIndexOf('/');
    const colon = rest.indexOf(':', lastSlash + 1);
    if (colon >= 0) {
      reference = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
      if (!TAG.test(reference)) throw new ImageReferenceError(`${input}: "${reference}" is not a valid tag`);
    }
  }
  const parts = rest.split('/');
  const first = parts[0] ?? '';
  const namesRegistry = parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = namesRegistry ? first : DOCKER_HUB;
  let repository = (namesRegistry ? parts.slice(1) : parts).join('/');
  if (registry === DOCKER_HUB && !repository.includes('/')) repository = `library/${repository}`;
  if (!REPOSITORY.test(repository)) {
    throw new ImageReferenceError(`${input}: "${repository}" is not a repository name (lower-case letters, digits, . _ - and /)`);
  }
  return { registry, repository, reference };
}

/** `registry/repository@digest`, as `ark jobs create --image` and the API take it. */
export function pinnedReference(image: ImageReference, digest: string): string {
  return `${image.registry}/${image.repository}@${digest}`;
}

function isLoopback(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\./.test(name);
}

/** The API base: https, except a loopback registry (a local `docker-registry`), or with `plainHttp`. */
export function registryBase(registry: string, plainHttp = false): string {
  const host = registry === DOCKER_HUB ? DOCKER_HUB_API : registry;
  return `${plainHttp || isLoopback(host) ? 'http' : 'https'}://${host}`;
}

/** Parses `Bearer realm="...",service="...",scope="..."`; undefined for any other scheme. */
export function parseBearerChallenge(header: string | null): Record<string, string> | undefined {
  if (header === null || !/^Bearer\s/i.test(header)) return undefined;
  const params: Record<string, string> = {};
  for (const match of header.slice(7).matchAll(/([A-Za-z_]+)="([^"]*)"/g)) params[(match[1] ?? '').toLowerCase()] = match[2] ?? '';
  return params.realm ? params : undefined;
}

export interface ResolveOptions {
  fetch?: typeof fetch;
  plainHttp?: boolean;
  timeoutMs?: number;
}

export interface ResolvedImage {
  image: ImageReference;
  digest: string;
  media_type: string | null;
  pinned: string;
}

export class RegistryError extends Error {
  override name = 'RegistryError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Asks the image's registry which digest its tag names now. */
export async function resolveImageDigest(text: string, options: ResolveOptions = {}): Promise<ResolvedImage> {
  const image = parseImageReference(text);
  const doFetch = options.fetch ?? fetch;
  const signal = AbortSignal.timeout(options.timeoutMs ?? 30_000);
  const url = `${registryBase(image.registry, options.plainHttp)}/v2/${image.repository}/manifests/${image.reference}`;
  const ask = (method: 'HEAD' | 'GET', token?: string) =>
    doFetch(url, {
      method,
      headers: { accept: MANIFEST_TYPES, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal,
      redirect: 'follow',
    });
  let token: string | undefined;
  let answer = await ask('HEAD');
  if (answer.status === 401) {
    const challenge = parseBearerChallenge(answer.headers.get('www-authenticate'));
    if (challenge === undefined) throw new RegistryError(`${image.registry} asks for credentials this command does not have`, 401);
    const tokenUrl = new URL(challenge.realm as string);
    if (challenge.service) tokenUrl.searchParams.set('service', challenge.service);
    tokenUrl.searchParams.set('scope', challenge.scope ?? `repository:${image.repository}:pull`);
    const tokenAnswer = await doFetch(tokenUrl, { signal });
    if (!tokenAnswer.ok)
      throw new RegistryError(`${tokenUrl.host} refused an anonymous pull token (${tokenAnswer.status})`, tokenAnswer.status);
    const body = (await tokenAnswer.json()) as { token?: string; access_token?: string };
    token = body.token ?? body.access_token;
    if (!token) throw new RegistryError(`${tokenUrl.host} answered no token`);
    answer = await ask('HEAD', token);
  }
  if (answer.status === 404) throw new RegistryError(`${image.registry} has no ${image.repository}:${image.reference}`, 404);
  if (answer.status === 401 || answer.status === 403) {
    throw new RegistryError(`${image.registry} does not let anonymous users pull ${image.repository} (${answer.status})`, answer.status);
  }
  if (!answer.ok)
    throw new RegistryError(`${image.registry} answered ${answer.status} for ${image.repository}:${image.reference}`, answer.status);
  let digest = answer.headers.get('docker-content-digest');
  let mediaType = answer.headers.get('content-type');
  if (digest === null || !DIGEST.test(digest)) {
    // Some registries leave the header off a HEAD: the digest of a manifest is the sha256 of its exact bytes.
    const full = await ask('GET', token);
    if (!full.ok) throw new RegistryError(`${image.registry} answered ${full.status} for the manifest`, full.status);
    digest = `sha256:${createHash('sha256')
      .update(Buffer.from(await full.arrayBuffer()))
      .digest('hex')}`;
    mediaType = full.headers.get('content-type');
  }
  return { image, digest, media_type: mediaType, pinned: pinnedReference(image, digest) };
}
