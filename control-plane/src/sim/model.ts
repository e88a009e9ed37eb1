import { createHash } from 'node:crypto';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { authorizationTypes } from '@x402/evm';
import { getAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Principal, Role } from '../domain/accounts/principal.js';
import { DomainError } from '../errors.js';
import { insertAccount } from '../store/accounts.js';
import { issueApiKey } from '../services/accounts/credentials.js';
import { appendAudit } from '../store/audit.js';
import type { Hex } from '../chain/reader.js';
import { type Balance, withdrawalRequest } from './adapter.js';
import { SimAgent } from './agents.js';
import { BASE_CHAIN_ID, BASE_USDC } from './chain.js';
import type { DefectKey } from './known-defects.js';
import type { World } from './world.js';

// What the simulation knows of its users, machines, jobs and requests (the model), and the actions users take
// through the public use cases. Everything a user is owed is judged from this knowledge and the simulated chain,
// never from what the control plane says it did.

export type SignUpKind = 'renter' | 'host' | 'agent';

export interface SimUser {
  index: number;
  kind: SignUpKind;
  accountId: string;
  role: Role;
  /** The credential it acts with: a key with both scopes for people (sessions carry both), the renter key for agents. */
  principal: Principal;
  /** Its own wallet on the chain: deposits and x402 payments come from it, withdrawals go to it. */
  wallet: { key: Hex; address: Hex };
  depositAddress: Hex | null;
  withdrawalAddressId: string | null;
}

export interface SimMachine {
  index: number;
  ownerIndex: number;
  machineId: string;
  agent: SimAgent;
}

export interface SimJob {
  index: number;
  jobId: string;
  renterIndex: number;
  machineIndex: number;
}

export interface SimWithdrawal {
  id: string;
  userIndex: number;
  balance: Balance;
}

/** A fixed scrypt string: the simulation never signs in with a password, and hashing one costs 170 ms. */
const PASSWORD_HASH = `scrypt$N=32768,r=8,p=1$${'A'.repeat(22)}$${'A'.repeat(43)}`;
const FAR_FUTURE = new Date('2100-01-01T00:00:00Z');
const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsfwXhh5k9jbWbJkQJ1jV8X0Gq1V5XbCqH0bVpQ8Rk7 sim@renter';
export const SIM_IMAGE = `127.0.0.1:5000/ark/job@sha256:${'b'.repeat(64)}`;

const walletAddresses = new Map<Hex, Hex>();

export class SimModel {
  readonly users: SimUser[] = [];
  readonly machines: SimMachine[] = [];
  readonly jobs: SimJob[] = [];
  readonly withdrawals: SimWithdrawal[] = [];
  readonly knownDefects: ReadonlySet<DefectKey>;
  /** One line per executed command: what it was and what came of it (printed with a failure). */
  readonly trace: string[] = [];
  adminAccountId = '';
  paused = false;
  readonly #seed: number;
  #accounts = 0;

  constructor(seed: number, knownDefects: ReadonlySet<DefectKey>) {
    this.#seed = seed;
    this.knownDefects = knownDefects;
  }

  user(i: number): SimUser {
    return this.users[i % this.users.length] as SimUser;
  }

  machine(i: number): SimMachine {
    return this.machines[i % this.machines.length] as SimMachine;
  }

  job(i: number): SimJob {
    return this.jobs[i % this.jobs.length] as SimJob;
  }

  ownerOf(machineId: string): SimUser | undefined {
    const machine = this.machines.find((m) => m.machineId === machineId);
    return machine ? this.users[machine.ownerIndex] : undefined;
  }

  /** A wallet of the simulation's own: reproducible from the seed and a label (cached: deriving one costs milliseconds). */
  wallet(label: string): { key: Hex; address: Hex } {
    const key = `0x${createHash('sha256').update(`ark-sim-wallet:${this.#seed}:${label}`).digest('hex')}` as Hex;
    let address = walletAddresses.get(key);
    if (!address) {
      address = privateKeyToAccount(key).address.toLowerCase() as Hex;
      walletAddresses.set(key, address);
    }
    return { key, address };
  }

  // ---- sign-up ----

  /** The operator: created once per run (reviews withdrawals, pauses admissions). */
  async createAdmin(world: World): Promise<void> {
    const row = await this.#insertHuman(world, 'admin');
    this.adminAccountId = row.accountId;
  }

  /**
   * A sign-up. People: the row sign-up writes (a verified email, as after the mailed link) and a key with both
   * scopes. Wallet agents: the real registration, an EIP-4361 challenge signed by the agent's wallet.
   */
  async signUp(world: World, kind: SignUpKind): Promise<SimUser> {
    const index = this.users.length;
    const wallet = this.wallet(`user:${index}`);
    let principal: Principal;
    let role: Role;
    if (kind === 'agent') {
      const challenge = await world.services.accounts.agentRegistrationChallenge(getAddress(wallet.address));
      const signature = await privateKeyToAccount(wallet.key).signMessage({ message: challenge.message });
      const registered = await world.services.accounts.registerAgent({
        message: challenge.message,
        signature,
        agent: { name: `sim agent ${index}`, vendor: 'sim', model: 'sim-1' },
      });
      role = registered.account.role;
      principal = {
        accountId: registered.account.id,
        role,
        authMethod: 'api-key',
        credentialId: registered.apiKey.key.id,
        scopes: new Set(['renter']),
        emailVerified: false,
        accountKind: 'agent',
        stepUp: { until: FAR_FUTURE, method: 'wallet' },
      };
    } else {
      const row = await this.#insertHuman(world, kind);
      role = kind;
      principal = row.principal;
    }
    const user: SimUser = {
      index,
      kind,
      accountId: principal.accountId,
      role,
      principal,
      wallet,
      depositAddress: null,
      withdrawalAddressId: null,
    };
    this.users.push(user);
    return user;
  }

  async #insertHuman(world: World, role: Role): Promise<{ accountId: string; principal: Principal }> {
    const now = world.clock.now();
    const n = this.#accounts++;
    return world.store.db.transaction().execute(async (trx) => {
      const account = await insertAccount(trx, {
        email: `sim-${n}@example.test`,
        passwordHash: PASSWORD_HASH,
        name: null,
        role,
        emailVerified: true,
        now,
      });
      await appendAudit(trx, { at: now, actorAccountId: account.id, action: 'account.signed_up', subject: account.id, detail: { role } });
      const key = await issueApiKey(trx, { accountId: account.id, label: 'sim', scopes: ['renter', 'host'], expiresAt: null, now });
      const principal: Principal = {
        accountId: account.id,
        role,
        authMethod: 'api-key',
        credentialId: key.row.id,
        scopes: new Set(['renter', 'host']),
        emailVerified: true,
        accountKind: 'human',
        stepUp: { until: FAR_FUTURE, method: 'password' },
      };
      return { accountId: account.id, principal };
    });
  }

  // ---- hosting ----

  /** Turns hosting on (an enrollment token, as `ark-agent` with a token does) and enrolls a machine that goes live. */
  async enrollMachine(world: World, owner: SimUser): Promise<SimMachine> {
    const token = await world.services.pairing.createEnrollmentToken({ principal: owner.principal, goLive: true });
    const index = this.machines.length;
    const { machineId } = await world.services.pairing.enroll({
      token: token.token,
      publicKey: Buffer.alloc(32, index + 1).toString('base64'),
      manifest: {
        hostname: `sim-rig-${index}`,
        gpus: [
          { pci_address: '00000000:01:00.0', model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
          { pci_address: '00000000:02:00.0', model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
        ],
        cpu: { model: 'AMD Ryzen 9 7950X', cores: 16 },
        ram_bytes: '137438953472',
        disk_bytes: '2000398934016',
        os: 'Ubuntu 24.04',
        driver_version: '550.54.14',
        cuda_version: '12.4',
        agent_version: '0.1.0',
        region: 'eu-west',
      },
    });
    const machine: SimMachine = { index, ownerIndex: owner.index, machineId, agent: new SimAgent(machineId, world.config.meterIntervalS) };
    this.machines.push(machine);
    // The agent connects at once: its first healthy heartbeat lists the seeded offer.
    await machine.agent.turn(world);
    await world.flushHeartbeats();
    return machine;
  }

  // ---- money in ----

  async depositAddress(world: World, user: SimUser): Promise<Hex> {
    if (user.depositAddress) return user.depositAddress;
    const view = await world.services.deposits.address(user.accountId);
    if (!view) throw new Error('deposits are not configured in the simulation');
    user.depositAddress = view.address.toLowerCase() as Hex;
    return user.depositAddress;
  }

  /** An x402 top-up as a client pays it: the 402 with the requirement, then the signed EIP-3009 authorization. */
  async topUp(world: World, user: SimUser, amountMicro: bigint): Promise<string> {
    const x402 = world.services.x402;
    const asked = await x402.topUp({ accountId: user.accountId, amountMicro, payment: null });
    if (asked.status !== 402) return `answered ${asked.status}`;
    const accepted = asked.body.accepts[0];
    if (!accepted) throw new Error('the 402 offered no requirement');
    const nowS = BigInt(Math.floor(world.clock.now().getTime() / 1000));
    const authorization = {
      from: getAddress(user.wallet.address),
      to: getAddress(accepted.payTo),
      value: amountMicro,
      validAfter: nowS - 60n,
      validBefore: nowS + BigInt(accepted.maxTimeoutSeconds),
      nonce: `0x${createHash('sha256').update(`x402:${user.index}:${nowS}:${amountMicro}:${this.trace.length}`).digest('hex')}` as Hex,
    };
    const signature = await privateKeyToAccount(user.wallet.key).signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId: BASE_CHAIN_ID, verifyingContract: getAddress(BASE_USDC) },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: authorization,
    });
    const wire = Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
    const header = encodePaymentSignatureHeader({
      x402Version: 2,
      resource: asked.body.resource,
      accepted,
      payload: { authorization: wire, signature },
    } as never);
    const paid = await x402.topUp({ accountId: user.accountId, amountMicro, payment: header });
    if (paid.status === 200) return `top-up ${paid.body.state}`;
    if (paid.status === 202) return 'top-up settling';
    if (paid.status === 402) return `top-up refused: ${paid.body.error}`;
    return `answered ${paid.status}`;
  }

  // ---- renting ----

  async reserve(world: World, renter: SimUser, machine: SimMachine, durationS: number, budgetMicro: bigint | null): Promise<SimJob> {
    const offer = await world.store.db.selectFrom('offers').select('id').where('machine_id', '=', machine.machineId).executeTakeFirst();
    if (!offer) throw new DomainError('NOT_FOUND', 'the machine has no offer');
    const quote = await world.services.jobs.createQuote(renter.accountId, {
      offer_id: offer.id,
      gpu_count: 1,
      duration_limit_s: durationS,
      image_digest: SIM_IMAGE,
      ...(budgetMicro !== null ? { budget_micro: budgetMicro.toString() } : {}),
    });
    const { jobId } = await world.services.jobs.reserve(renter.accountId, { quote_id: quote.id, ssh_public_keys: [SSH_KEY] });
    const job: SimJob = { index: this.jobs.length, jobId, renterIndex: renter.index, machineIndex: machine.index };
    this.jobs.push(job);
    return job;
  }

  // ---- money out ----

  async withdrawalAddress(world: World, user: SimUser): Promise<string> {
    if (user.withdrawalAddressId) return user.withdrawalAddressId;
    const row = await world.services.accounts.addWithdrawalAddress({
      accountId: user.accountId,
      address: getAddress(user.wallet.address),
      network: 'base',
      label: 'my wallet',
    });
    user.withdrawalAddressId = row.id;
    return row.id;
  }

  /** The account asks to take `amountMicro` out of `balance` (the route's request, built by the adapter). */
  async withdraw(world: World, user: SimUser, balance: Balance, amountMicro: bigint): Promise<string> {
    const addressId = await this.withdrawalAddress(world, user);
    const row = await world.services.withdrawals.request(withdrawalRequest(user, balance, amountMicro, addressId));
    this.withdrawals.push({ id: row.id, userIndex: user.index, balance });
    return `${row.kind} ${row.id.slice(0, 8)} ${row.state}`;
  }
}

/** Runs an action; a refusal the public API would answer (a DomainError) is an outcome, anything else a failure. */
export async function attempt(action: () => Promise<string>): Promise<string> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof DomainError) return `refused ${error.code}`;
    throw error;
  }
}

export const formatMicro = (micro: bigint): string => {
  const whole = micro / 1_000_000n;
  const frac = (micro % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${whole}${frac ? `.${frac}` : ''} USDC`;
};
