import type { Clock } from '../../clock.js';
import type { WebhooksConfig } from '../../config/webhooks.js';
import type { SecretBox } from '../../domain/accounts/secret-box.js';
import type { Store } from '../../store/db.js';

/** Resolves a host name to every address it has (node:dns lookup with all: true). */
export type HostResolver = (host: string) => Promise<string[]>;

/** What every webhook use case is given: built once in buildWebhookServices. */
export interface WebhookDeps {
  store: Store;
  clock: Clock;
  settings: WebhooksConfig;
  /** Seals endpoint secrets at rest, bound to their endpoint. */
  box: SecretBox;
  resolve: HostResolver;
}

/** Where an endpoint's secret is sealed: bound to the endpoint, so a sealed secret copied to another row does not open. */
export const webhookSecretContext = (endpointId: string): string => `webhook:${endpointId}`;
