// The watched networks (ARK_CHAINS): the document's shape and its validation. Pure: the caller reads the file.

/** The primary network: deposit addresses and x402 are announced on it (contract part 2). */
export const PRIMARY_CHAIN_ID = 8453;
export const PRIMARY_NETWORK_NAME = 'base';

/** Bounds on the document, so a typo cannot make the watcher loop over thousands of entries. */
export const MAX_NETWORKS = 16;
export const MAX_ASSETS_PER_NETWORK = 16;
/** A token with more decimals than this is not a currency we can price in micro-USD safely. */
export const MAX_TOKEN_DECIMALS = 36;

export interface ChainAsset {
  symbol: string;
  /** Lower-case 0x address of the ERC-20 contract. */
  address: `0x${string}`;
  decimals: number;
}

export interface ChainNative {
  symbol: string;
  decimals: number;
  /** Chainlink-style aggregator (latestRoundData, decimals) quoting the coin in USD. */
  priceFeed: `0x${string}`;
  /** Taken off the oracle price when crediting (0..9999). */
  spreadBps: number;
}

export interface ChainNetwork {
  name: string;
  chainId: number;
  rpcUrl: string;
  assets: ChainAsset[];
  native: ChainNative | null;
}

export interface ChainsConfig {
  /** The primary (chain 8453, base) first. */
  networks: ChainNetwork[];
}

/** A document that is not a valid ARK_CHAINS file; `field` is its JSON path, e.g. `networks[0].assets[1].decimals`. */
export class ChainsDocumentError extends Error {
  override name = 'ChainsDocumentError';
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

const NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;
const SYMBOL = /^[A-Za-z0-9.]{1,16}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Validates a parsed ARK_CHAINS document whole; throws ChainsDocumentError naming the first bad field. */
export function parseChainsDocument(doc: unknown): ChainsConfig {
  const root = object(doc, '(document)');
  only(root, '(document)', ['networks']);
  const list = root.networks;
  if (!Array.isArray(list) || list.length === 0) throw new ChainsDocumentError('networks', 'must be a non-empty array');
  if (list.length > MAX_NETWORKS) throw new ChainsDocumentError('networks', `must list at most ${MAX_NETWORKS} networks`);
  const networks = list.map((raw, i) => network(raw, `networks[${i}]`));
  const first = networks[0] as ChainNetwork;
  if (first.chainId !== PRIMARY_CHAIN_ID)
    throw new ChainsDocumentError('networks[0].chain_id', `must be ${PRIMARY_CHAIN_ID} (the primary network is base)`);
  if (first.name !== PRIMARY_NETWORK_NAME) throw new ChainsDocumentError('networks[0].name', `must be "${PRIMARY_NETWORK_NAME}"`);
  networks.forEach((n, i) => {
    if (networks.findIndex((m) => m.name === n.name) !== i) throw new ChainsDocumentError(`networks[${i}].name`, `repeats "${n.name}"`);
    if (networks.findIndex((m) => m.chainId === n.chainId) !== i)
      throw new ChainsDocumentError(`networks[${i}].chain_id`, `repeats ${n.chainId}`);
  });
  return { networks };
}

function network(raw: unknown, at: string): ChainNetwork {
  const n = object(raw, at);
  only(n, at, ['name', 'chain_id', 'rpc_url', 'assets', 'native']);
  const name = string(n.name, `${at}.name`);
  if (!NAME.test(name)) throw new ChainsDocumentError(`${at}.name`, 'must be 1..32 lower-case letters, digits or dashes');
  const chainId = integer(n.chain_id, `${at}.chain_id`, 1, 2 ** 53 - 1);
  const rpcUrl = string(n.rpc_url, `${at}.rpc_url`);
  let url: URL;
  try {
    url = new URL(rpcUrl);
  } catch {
    throw new ChainsDocumentError(`${at}.rpc_url`, 'must be a URL');
  }
  if (!['http:', 'https:'].includes(url.protocol)) throw new ChainsDocumentError(`${at}.rpc_url`, 'must be an http:// or https:// URL');
  const rawAssets = n.assets ?? [];
  if (!Array.isArray(rawAssets)) throw new ChainsDocumentError(`${at}.assets`, 'must be an array');
  if (rawAssets.length > MAX_ASSETS_PER_NETWORK)
    throw new ChainsDocumentError(`${at}.assets`, `must list at most ${MAX_ASSETS_PER_NETWORK} assets`);
  const assets = rawAssets.map((a, j) => asset(a, `${at}.assets[${j}]`));
  assets.forEach((a, j) => {
    if (assets.findIndex((b) => b.address === a.address) !== j)
      throw new ChainsDocumentError(`${at}.assets[${j}].address`, 'repeats another asset');
    if (assets.findIndex((b) => b.symbol === a.symbol) !== j)
      throw new ChainsDocumentError(`${at}.assets[${j}].symbol`, 'repeats another asset');
  });
  const native = n.native === undefined || n.native === null ? null : nativeCoin(n.native, `${at}.native`);
  if (assets.length === 0 && native === null)
    throw new ChainsDocumentError(`${at}.assets`, 'must list an asset when there is no native coin');
  return { name, chainId, rpcUrl, assets, native };
}

function asset(raw: unknown, at: string): ChainAsset {
  const a = object(raw, at);
  only(a, at, ['symbol', 'address', 'decimals']);
  return {
    symbol: symbol(a.symbol, `${at}.symbol`),
    address: address(a.address, `${at}.address`),
    decimals: integer(a.decimals, `${at}.decimals`, 0, MAX_TOKEN_DECIMALS),
  };
}

function nativeCoin(raw: unknown, at: string): ChainNative {
  const c = object(raw, at);
  only(c, at, ['symbol', 'decimals', 'price_feed', 'spread_bps']);
  return {
    symbol: symbol(c.symbol, `${at}.symbol`),
    decimals: integer(c.decimals, `${at}.decimals`, 0, MAX_TOKEN_DECIMALS),
    priceFeed: address(c.price_feed, `${at}.price_feed`),
    spreadBps: integer(c.spread_bps, `${at}.spread_bps`, 0, 9999),
  };
}

function object(v: unknown, at: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ChainsDocumentError(at, 'must be an object');
  return v as Record<string, unknown>;
}

function only(o: Record<string, unknown>, at: string, keys: string[]): void {
  for (const key of Object.keys(o)) {
    if (!keys.includes(key)) throw new ChainsDocumentError(at === '(document)' ? key : `${at}.${key}`, 'is not a known field');
  }
}

function string(v: unknown, at: string): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 2048) throw new ChainsDocumentError(at, 'must be a non-empty string');
  return v;
}

function symbol(v: unknown, at: string): string {
  const s = string(v, at);
  if (!SYMBOL.test(s)) throw new ChainsDocumentError(at, 'must be 1..16 letters, digits or dots');
  return s;
}

function address(v: unknown, at: string): `0x${string}` {
  const s = string(v, at);
  if (!ADDRESS.test(s)) throw new ChainsDocumentError(at, 'must be a 0x-prefixed 20-byte hex address');
  return s.toLowerCase() as `0x${string}`;
}

function integer(v: unknown, at: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new ChainsDocumentError(at, `must be an integer from ${min} to ${max}`);
  return v;
}
