// Simulated agents for the cluster bank test: machines enrolled over HTTP through the load balancer, each speaking the
// real signed channel (RawAgent: challenge, ed25519-signed hello and heartbeats, every control-plane frame verified)
// through the cuttable hop to HAProxy. Each heartbeats every second and, when its connection ends (a replica killed,
// paused and marked down, the hop cut), reconnects at once to whichever replica HAProxy gives it; the longest time
// from a lost connection to the next welcome is the reconnect figure the bound is checked against.
//
// They also run jobs (sim-jobs.ts): a launch_job is answered with accepted and ready (a real SSH endpoint for the
// readiness check), a RUNNING job is metered with a signed receipt every second, stop_job gets a final receipt and
// stopped, clean_job cleaned. Reliable messages (statuses, receipts) keep their per-machine id until acknowledged and
// are resent in order after a reconnect, as the real agent's outbox does; commands are applied once by command_seq.
import { RawAgent, type TestMachine, testMachine } from '@ark/control-plane/gateway/testing/raw-agent';
import { sampleManifest } from '@ark/control-plane/testing/hosting';
import { type SshEndpoint, startSshEndpoint } from '../harness/ssh-endpoint.js';
import type { WorkloadClient } from './client.js';
import { SimJobs } from './sim-jobs.js';

export interface Sim {
  machine: TestMachine;
  agent: RawAgent | null;
  /** When the last connection was found gone (null while connected). */
  lostAt: number | null;
  connecting: boolean;
  /** The last reliable message id used, and the messages not yet acknowledged, in id order. */
  lastId: number;
  outbox: Array<{ id: number; body: Record<string, unknown> }>;
  /** The highest command_seq applied. */
  commandsApplied: number;
  endpoint: SshEndpoint;
}

export class SimAgents {
  readonly #sims: Sim[] = [];
  #timer: NodeJS.Timeout | undefined;
  #pump: NodeJS.Timeout | undefined;
  #controlPlaneKey = '';
  readonly downtimesMs: number[] = [];
  reconnects = 0;
  readonly jobs = new SimJobs((sim, body) => this.#sendReliable(sim, body));

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
      const endpoint = await startSshEndpoint({ unref: true });
      this.#sims.push({ machine, agent: null, lostAt: Date.now(), connecting: false, lastId: 0, outbox: [], commandsApplied: 0, endpoint });
    }
  }

  get machineIds(): string[] {
    return this.#sims.map((sim) => sim.machine.id);
  }

  #sendReliable(sim: Sim, body: Record<string, unknown>): void {
    const id = ++sim.lastId;
    sim.outbox.push({ id, body });
    try {
      sim.agent?.send({ ...body, id });
    } catch {
      // Closing: resent after the reconnect.
    }
  }

  async #connect(sim: Sim): Promise<void> {
    sim.connecting = true;
    try {
      const agent = await RawAgent.connect(this.agentBase, sim.machine, this.#controlPlaneKey);
      const welcome = await agent.handshake({ commands_applied_upto: sim.commandsApplied });
      // What the control plane applied is done; the rest goes again, in order, with the same ids.
      sim.outbox = sim.outbox.filter((m) => m.id > welcome.acked_upto);
      if (sim.lastId < welcome.acked_upto) sim.lastId = welcome.acked_upto;
      this.jobs.acknowledged(sim, welcome.acked_upto);
      for (const m of sim.outbox) {
        agent.send({ ...m.body, id: m.id });
        this.jobs.resent++;
      }
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

  /** Handles what each connected agent received: acks, commands. */
  async #handle(sim: Sim): Promise<void> {
    const agent = sim.agent;
    if (agent === null) return;
    const messages = agent.received.splice(0);
    for (const m of messages as any[]) {
      if (m.t === 'ack') {
        sim.outbox = sim.outbox.filter((o) => o.id > m.upto);
        this.jobs.acknowledged(sim, m.upto);
      } else if (m.t === 'command') {
        if (m.command_seq > sim.commandsApplied) {
          await this.jobs.apply(sim, m.kind, m.body);
          sim.commandsApplied = m.command_seq;
        }
        try {
          agent.send({ t: 'command_ack', upto: sim.commandsApplied });
        } catch {
          // Closing: the command comes again after the reconnect and is acknowledged then.
        }
      }
    }
  }

  /** Connects every machine and starts the heartbeat/meter/reconnect tick. */
  async start(): Promise<void> {
    await Promise.all(this.#sims.map((sim) => this.#connect(sim)));
    this.downtimesMs.length = 0;
    let pumping = false;
    this.#pump = setInterval(() => {
      if (pumping) return;
      pumping = true;
      void Promise.all(this.#sims.map((sim) => this.#handle(sim))).finally(() => {
        pumping = false;
      });
    }, 50);
    this.#timer = setInterval(() => {
      for (const sim of this.#sims) {
        if (sim.agent !== null) {
          try {
            sim.agent.send({
              t: 'heartbeat',
              at: new Date().toISOString(),
              uptime_s: 1,
              healthy: true,
              problems: [],
              running_jobs: this.jobs.runningOn(sim),
            });
          } catch {
            // Closing: the close handler marks it lost.
          }
        } else if (!sim.connecting) {
          this.reconnects++;
          void this.#connect(sim);
        }
      }
      // Metering goes on while disconnected: the receipts wait in the outbox.
      this.jobs.meterTick();
    }, 1_000);
  }

  /** How many are on a channel now. */
  connected(): number {
    return this.#sims.filter((sim) => sim.agent !== null).length;
  }

  /** Reliable messages not yet acknowledged, over every machine. */
  unacknowledged(): number {
    return this.#sims.reduce((n, sim) => n + sim.outbox.length, 0);
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
    clearInterval(this.#pump);
    for (const sim of this.#sims) {
      sim.agent?.close();
      void sim.endpoint.close();
    }
  }
}
