import type { LaunchJobBody } from '@ark/shared';
import { SecretBox } from '../accounts/secret-box.js';

// A job's secrets at rest: the renter's env, the launch body (which carries the env) and a model job's engine key,
// each sealed AES-256-GCM and bound to the job id, so no sealed value can be moved to another job or purpose.

const engineKeyContext = (jobId: string) => `job-engine-key:${jobId}`;
const envContext = (jobId: string) => `job-env:${jobId}`;
const launchContext = (jobId: string) => `job-launch:${jobId}`;

/** The launch body as stored: every field but the fence, which is given each time it is queued. */
export type StoredLaunch = Omit<LaunchJobBody, 'fence'>;

export class JobSecrets {
  readonly #box: SecretBox;

  constructor(secretKey: Buffer) {
    this.#box = new SecretBox(secretKey);
  }

  sealLaunch(jobId: string, launch: StoredLaunch): string {
    return this.#box.seal(JSON.stringify(launch), launchContext(jobId));
  }

  /** The launch body again, under `fence` (a rebind queues it with the job's new fence). */
  openLaunch(jobId: string, sealed: string, fence: bigint): LaunchJobBody {
    const body = JSON.parse(this.#box.open(sealed, launchContext(jobId))) as StoredLaunch;
    return { ...body, fence: fence.toString() };
  }

  sealEnv(jobId: string, env: Record<string, string>): string {
    return this.#box.seal(JSON.stringify(env), envContext(jobId));
  }

  sealEngineKey(jobId: string, key: string): string {
    return this.#box.seal(key, engineKeyContext(jobId));
  }

  /** The job's engine key, for the access endpoint of a model-kind job. */
  engineApiKeyOf(jobId: string, sealed: string | null): string | null {
    return sealed === null ? null : this.#box.open(sealed, engineKeyContext(jobId));
  }

  /** The renter's env values and the engine key: redacted from anything an agent reports. */
  secretsOf(jobId: string, envSealed: string, engineKeySealed: string | null): string[] {
    const env = envSealed === '' ? {} : (JSON.parse(this.#box.open(envSealed, envContext(jobId))) as Record<string, string>);
    const key = this.engineApiKeyOf(jobId, engineKeySealed);
    return [...(key !== null ? [key] : []), ...Object.values(env)];
  }
}
