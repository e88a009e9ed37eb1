import type { WalletCodeReader } from '../../chain/wallet-code.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../domain/accounts/secret-box.js';
import type { Mailer } from '../../mail.js';
import type { Store } from '../../store/db.js';

/** The settings the account use cases read. */
export type AccountSettings = Pick<
  Config,
  'publicBaseUrl' | 'sessionTtlMs' | 'stepUpTtlMs' | 'emailVerificationTtlMs' | 'termsVersion' | 'termsUrl' | 'agentChallengeTtlMs'
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
}
