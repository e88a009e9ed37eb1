import { randomBytes } from 'node:crypto';
import type { Hex } from '../../chain/reader.js';
import { planSweep, SWEEP_VALID_S_MAX, type SweepAsset, type SweepPlan } from '../../domain/reconciliation/sweep-plan.js';
import { stateUnavailable } from '../../errors.js';
import type { TreasuryDeps } from './deps.js';
import { loadOwners, readNetwork, requireChain } from './holdings.js';

export { SWEEP_VALID_S_MAX };

export interface SweepPlanDocument {
  generated_at: string;
  /** How the plan is signed and sent: control-plane/README.md, "Sweeping deposit addresses". */
  instructions: string;
  plans: SweepPlan[];
}

/**
 * The transfers that would move every deposit address's funds to the treasury, per network, from the balances at the
 * finalized block (a deposit not yet final is left for the next plan). Nothing is signed or sent here.
 */
export async function sweepPlan(deps: TreasuryDeps, input: { minMicro: bigint; validForS: number }): Promise<SweepPlanDocument> {
  const chain = requireChain(deps);
  const treasury = deps.settings.address;
  if (!treasury) throw stateUnavailable('no treasury address is configured (ARK_TREASURY_ADDRESS): nowhere to sweep to');
  const owners = await loadOwners(deps, chain);
  // Only the deposit addresses are swept; the treasury and the payout wallet keep theirs.
  const deposit = owners.places.map((place, i) => (place === 'deposit_addresses' ? i : -1)).filter((i) => i >= 0);
  const addresses = deposit.map((i) => ({ index: owners.indexes[i] as bigint, address: owners.addresses[i] as Hex }));
  const now = deps.clock.now();
  const validBeforeS = BigInt(Math.floor(now.getTime() / 1000) + Math.min(input.validForS, SWEEP_VALID_S_MAX));
  const plans: SweepPlan[] = [];
  for (const network of deps.networks) {
    const reader = chain.readerFor(network);
    const read = await readNetwork(reader, network, owners);
    const stablecoins: SweepAsset[] = [];
    for (const [j, asset] of network.assets.entries()) {
      const balances = deposit.map((i) => (read.tokenBalances[j] as bigint[])[i] as bigint);
      const authorization = balances.some((b) => b > 0n) ? await reader.authorizationDomain(asset.address, read.blockNumber) : null;
      stablecoins.push({ symbol: asset.symbol, token: asset.address, decimals: asset.decimals, authorization, balances });
    }
    const native: SweepAsset | null =
      network.native && read.nativeBalances
        ? {
            symbol: network.native.symbol,
            token: null,
            decimals: network.native.decimals,
            authorization: null,
            balances: deposit.map((i) => (read.nativeBalances as bigint[])[i] as bigint),
          }
        : null;
    plans.push(
      planSweep({
        network: network.name,
        chainId: network.chainId,
        blockNumber: read.blockNumber,
        treasury,
        addresses,
        stablecoins,
        native,
        nativePrice: read.nativePrice,
        minMicro: input.minMicro,
        validBeforeS,
        nonce: () => `0x${randomBytes(32).toString('hex')}`,
      }),
    );
  }
  return {
    generated_at: now.toISOString(),
    instructions:
      'Sign each transferWithAuthorization typed_data with the key at its derivation_path (offline, from the seed of ' +
      'ARK_DEPOSIT_XPUB) and send it from a funded wallet; sign the other transfers from the deposit address itself. ' +
      'See control-plane/README.md, "Sweeping deposit addresses".',
    plans,
  };
}
