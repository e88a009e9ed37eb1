// The few parts of oidc-provider 8.x (no bundled types) the subsystem test uses: a provider for one issuer whose
// Node request handler serves the discovery document.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ProviderConfiguration {
    clients?: Array<{ client_id: string; client_secret?: string; redirect_uris?: string[] }>;
    cookies?: { keys?: string[] };
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }
}
