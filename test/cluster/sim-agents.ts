// Simulated agents for the cluster bank test: machines enrolled over HTTP through the load balancer, each speaking the
// real signed channel (RawAgent: challenge, ed25519-signed hello and heartbeats, every control-plane frame verified)
// through the cuttable hop to HAProxy. Each heartbeats every second and, when its connection ends (a replica killed,
// paused and marked down, the hop cut), reconnects at once to whichever replica HAProxy gives it; the longest time
// from a lost connection to the next welcome is the reconnect figure the bound is checked against.
import { RawAgent, type TestMachine, testMachine } from '@ark/control-plane/gateway/testing/raw-agent';
import { sampleManifest } from '@ark/control-plane/testing/hosting';
import type { WorkloadClient } from './client.js';

interface Sim {
  machine: TestMachine;
  agent: RawAgent | null;
  /** When the last connection was found gone (null while connected). */
  lostAt: number | null;
  connecting: boolean;
}

export class SimAgents {
  readonly #sims: Sim[] = [];
  #timer: NodeJS.Timeout | undefined;
  #controlPlaneKey = '';
  readonly downtimesMs: number[] = [];
  reconnects = 0;

  constructor(readonly agentBase: string) {}

  /** Enrolls `count` machines for the host (an enrollment token each), through the load balancer. */
  async enroll(client: WorkloadClient, hostToken: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const token = await client.mutate('POST', '/api/v1/hosts/enrollment-tokens', hostToken, {});
      if (token.status !== 201) throw new Error(`enrollment token: ${token.status} ${JSON.stringify(token.body)}`);
      const machine = testMachine();
      const enrolled = await client.call('POST', '/api/v1/agents/enroll', '', {
        enrollment_token: token.body.enrollment_token,
        public_key: machine.publicKeyBase64,
        manifest: sampleManifest(),
      });
      if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status} ${JSON.stringify(enrolled.body)}`);
      machine.id = enrolled.body.machine_id;
      this.#controlPlaneKey = enrolled.body.control_plane_public_key;
      this.#sims.push({ machine, agent: null, lostAt: Date.now(), connecting: false });
    }
  }

  async #connect(sim: Sim): Promise<void> {
    sim.connecting = true;
    try {
      const agent = await RawAgent.connect(this.agentBase, sim.machine, this.#controlPlaneKey);
      await agent.handshake();
      sim.agent = agent;
      if (sim.lostAt !== null) this.downtimesMs.push(Date.now() - sim.lostAt);
      sim.lostAt = null;
      void agent.closed.then(() => {
        if (sim.agent === agent) {
          sim.agent = null;
          sim.lostAt = Date.now();
        }
      });
    } catch {
      // Refused or cut mid-handshake: the next tick tries again.
    } finally {
      sim.connecting = false;
    }
  }

  /** Connects every machine and starts the heartbeat/reconnect tick. */
  async start(): Promise<void> {
    await Promise.all(this.#sims.map((sim) => this.#connect(sim)));
    this.downtimesMs.length = 0;
    this.#timer = setInterval(() => {
      for (const sim of this.#sims) {
        if (sim.agent !== null) {
          try {
            sim.agent.heartbeat();
          } catch {
            // Closing: the close handler marks it lost.
          }
        } else if (!sim.connecting) {
          this.reconnects++;
          void this.#connect(sim);
        }
      }
    }, 1_000);
  }

  /** How many are on a channel now. */
  connected(): number {
    return this.#sims.filter((sim) => sim.agent !== null).length;
  }

  get count(): number {
    return this.#sims.length;
  }

  /** The longest outage so far, counting one still going on. */
  longestDowntimeMs(): number {
    const open = this.#sims.filter((sim) => sim.lostAt !== null).map((sim) => Date.now() - (sim.lostAt as number));
    return Math.max(0, ...this.downtimesMs, ...open);
  }

  stop(): void {
    clearInterval(this.#timer);
    for (const sim of this.#sims) sim.agent?.close();
  }
}
