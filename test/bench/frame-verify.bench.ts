// Signed frames verified per second against raw node:crypto verify of the same payload bytes, in one run.
// Budget (DESIGN.md): openFrame (size, JSON, signature, version, compiled schema) >= 0.5x raw crypto.verify.
// Also reports tweetnacl's verify rate, the reason the control plane verifies with node:crypto.
// Run: pnpm exec tsx test/bench/frame-verify.bench.ts
import { generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { ed25519PublicKeyToBase64, nodeEd25519Signer, nodeEd25519Verifier, openFrame, signFrame } from '@ark/shared';
import nacl from 'tweetnacl';

export interface FrameVerifyFigures {
  rawVerifyPerS: number;
  signedFramesPerS: number;
  ratio: number;
  tweetnaclVerifyPerS: number;
  payloadBytes: number;
  budget: { ratioMin: number };
  withinBudget: boolean;
}

export interface FrameVerifyOptions {
  /** Milliseconds per measured round (default 600); rounds alternate raw and framed. */
  roundMs?: number;
  /** Rounds of each (default 5); the medians are compared. */
  rounds?: number;
  log?: (line: string) => void;
}

/** Calls `work` in batches until `ms` pass; returns calls per second. */
function rate(ms: number, work: () => void): number {
  const batch = 200;
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < batch; i++) work();
    calls += batch;
    elapsed = performance.now() - start;
  }
  return (calls * 1000) / elapsed;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export async function run(options: FrameVerifyOptions = {}): Promise<FrameVerifyFigures> {
  const roundMs = options.roundMs ?? 600;
  const rounds = options.rounds ?? 5;
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  // A realistic heartbeat from a machine running two jobs.
  const payload = {
    v: 1,
    t: 'heartbeat',
    sid: 'Qm9vdHN0cmFwU2Vzc2lvbg',
    seq: 42,
    at: new Date().toISOString(),
    uptime_s: 86_400,
    healthy: true,
    problems: [],
    running_jobs: [
      { job_id: randomUUID(), fence: '3', container_state: 'running' },
      { job_id: randomUUID(), fence: '1', container_state: 'running' },
    ],
  };
  const raw = signFrame(payload, nodeEd25519Signer(privateKey));
  const frame = JSON.parse(raw) as { p: string; s: string };
  const bytes = Buffer.from(frame.p, 'utf8');
  const signature = Buffer.from(frame.s, 'base64');
  const verifier = nodeEd25519Verifier(publicKey);
  if (!openFrame(raw, verifier, 'agent').ok) throw new Error('the benchmark frame does not open');

  // Warm both paths up, then alternate rounds so drift (CPU frequency, other load) hits both alike.
  rate(200, () => verify(null, bytes, publicKey, signature));
  rate(200, () => openFrame(raw, verifier, 'agent'));
  const rawRates: number[] = [];
  const frameRates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    rawRates.push(rate(roundMs, () => verify(null, bytes, publicKey, signature)));
    frameRates.push(rate(roundMs, () => openFrame(raw, verifier, 'agent')));
  }
  const naclPublic = new Uint8Array(Buffer.from(ed25519PublicKeyToBase64(publicKey), 'base64'));
  const tweetnaclVerifyPerS = rate(Math.min(roundMs, 1_000), () => nacl.sign.detached.verify(bytes, signature, naclPublic));

  const rawVerifyPerS = median(rawRates);
  const signedFramesPerS = median(frameRates);
  const ratio = signedFramesPerS / rawVerifyPerS;
  const figures: FrameVerifyFigures = {
    rawVerifyPerS: Math.round(rawVerifyPerS),
    signedFramesPerS: Math.round(signedFramesPerS),
    ratio: Math.round(ratio * 1000) / 1000,
    tweetnaclVerifyPerS: Math.round(tweetnaclVerifyPerS),
    payloadBytes: bytes.length,
    budget: { ratioMin: 0.5 },
    withinBudget: ratio >= 0.5,
  };
  options.log?.(
    `signed frames: ${figures.signedFramesPerS}/s vs raw crypto.verify ${figures.rawVerifyPerS}/s = ${figures.ratio}x (budget >= 0.5x); tweetnacl ${figures.tweetnaclVerifyPerS}/s`,
  );
  return figures;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await run({ log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
