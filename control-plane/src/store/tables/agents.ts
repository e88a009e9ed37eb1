// Agent accounts by wallet: the challenges we issued (EIP-4361, single use) and each agent account's sign-in wallet.

export interface AgentChallengesTable {
  /** The EIP-4361 nonce: 32 alphanumeric characters, unique. */
  nonce: string;
  purpose: 'register' | 'step-up';
  /** Lower-case 0x address the message names. */
  address_key: string;
  /** The account a step-up challenge was issued to; null for registration. */
  account_id: string | null;
  /** The exact text issued: only this text, byte for byte, is accepted back. */
  message: string;
  issued_at: string;
  expires_at: string;
  used_at: string | null;
}

/** An agent account's sign-in wallet (one per account, one account per wallet) and its self-declared profile. */
export interface AccountWalletsTable {
  account_id: string;
  /** EIP-55 checksummed. */
  address: string;
  /** Lower-case, unique: the same wallet never has two accounts. */
  address_key: string;
  agent_name: string;
  agent_vendor: string;
  agent_model: string;
  created_at: string;
  /** The latest registration (a re-registration issues a new key and refreshes the profile). */
  registered_at: string;
}

export interface AgentsTables {
  agent_challenges: AgentChallengesTable;
  account_wallets: AccountWalletsTable;
}
