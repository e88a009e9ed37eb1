import { isIP } from 'node:net';
import { checkEndpointUrl, isNonPublicAddress } from '../../domain/webhooks/addresses.js';
import { DomainError } from '../../errors.js';
import type { HostResolver } from './deps.js';

/**
 * The addresses `url`'s host may be reached at, every one of them public unless private endpoints are allowed;
 * WEBHOOK_URL_REFUSED otherwise (also for a host that does not resolve). Checked when an endpoint is registered and
 * again at every attempt (the sender connects only to addresses this returned: no DNS rebinding).
 */
export async function allowedAddresses(url: string, allowPrivate: boolean, resolve: HostResolver): Promise<string[]> {
  const checked = checkEndpointUrl(url, allowPrivate);
  if (!checked.ok) throw new DomainError('WEBHOOK_URL_REFUSED', `The endpoint URL is refused: ${checked.reason}.`);
  const host = checked.url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) !== 0 ? [host] : await resolve(host);
  } catch {
    throw new DomainError('WEBHOOK_URL_REFUSED', 'The endpoint URL is refused: its host does not resolve.');
  }
  if (addresses.length === 0) throw new DomainError('WEBHOOK_URL_REFUSED', 'The endpoint URL is refused: its host does not resolve.');
  if (!allowPrivate && addresses.some(isNonPublicAddress)) {
    throw new DomainError(
      'WEBHOOK_URL_REFUSED',
      'The endpoint URL is refused: its host resolves to a loopback, private, link-local, reserved or documentation address, or an IPv6 form that carries one.',
    );
  }
  return addresses;
}
