import type { WalletCodeReader } from '../../chain/wallet-code.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { OAuthProviderName } from '../../config/oauth.js';
import type { SecretBox } from '../../domain/accounts/secret-box.js';
import type { Mailer } from '../../mail.js';
import type { OAuthProviderClient } from '../../oauth/providers.js';
import type { Store } from '../../store/db.js';

/** The settings the account use cases read. */
export type AccountSettings = Pick<
  Config,
  | 'publicBaseUrl'
  | 'sessionTtlMs'
  | 'stepUpTtlMs'
  | 'emailVerificationTtlMs'
  | 'termsVersion'
  | 'termsUrl'
  | 'agentChallengeTtlMs'
  | 'oauth'
>;

/** What every account use case is given: built once in buildAccountServices. */
export interface AccountDeps {
  store: Store;
  clock: Clock;
  mailer: Mailer;
  settings: AccountSettings;
  /** Seals TOTP seeds and third-party tokens at rest. */
  box: SecretBox;
  /** Reads contract code on the primary network (agent registration takes EOAs only); null: no network configured. */
  walletCode: WalletCodeReader | null;
  /** The sign-in providers the operator configured (GitHub, Google), by name. */
  oauthProviders: Partial<Record<OAuthProviderName, OAuthProviderClient>>;
}
