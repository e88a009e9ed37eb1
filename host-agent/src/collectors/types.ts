// Narrow interfaces between the agent and the machine it measures. A field that was not measured
// (nvidia-smi printed "N/A", the call failed, the platform has no such figure) is absent, never 0:
// the control plane's telemetry buckets treat absence as "never measured".

/** One GPU at one instant, keyed by its PCI address (`0000:3b:00.0`, lower case, 4-digit domain). */
export type GpuSample = {
  pci_address: string;
  model?: string;
  uuid?: string;
  vram_bytes?: bigint;
  temperature_c?: number;
  utilization_pct?: number;
  power_watts?: number;
  fan_pct?: number;
  memory_used_bytes?: number;
  /** Only for devices without their own framebuffer (GB10-style unified memory). */
  unified_memory_used_bytes?: number;
};

/** The host at one instant. */
export type HostSample = {
  cpu_utilization_pct?: number;
  load1?: number;
  memory_used_bytes?: number;
  disk_free_bytes?: number;
  uptime_s?: number;
};

/** Reports every GPU it can see; no GPU or no tooling means an empty list, never an error. */
export interface GpuCollector {
  sample(): Promise<GpuSample[]>;
}

/** Reports host figures; a figure that cannot be read is left out, never an error. */
export interface HostCollector {
  sample(): Promise<HostSample>;
}

/** What the enrollment manifest needs to know about one GPU. */
export type GpuDescription = {
  pci_address: string;
  model: string;
  /** Absent where the device reports no framebuffer of its own (unified memory) or its size is unreadable. */
  vram_bytes?: bigint;
  uuid?: string;
};

export type GpuInventory = {
  driver_version?: string;
  cuda_version?: string;
  gpus: GpuDescription[];
};

/** Implemented by GPU collectors that can also describe the hardware for enrollment. */
export interface GpuInventorySource {
  inventory(): Promise<GpuInventory>;
}

/** Pino-compatible subset, so the composition root can pass its logger straight in. */
export type CollectorLogger = {
  warn(detail: Record<string, unknown>, message: string): void;
};
