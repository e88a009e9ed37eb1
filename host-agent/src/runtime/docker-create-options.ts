// The engine's create body for a job container: its ports, its volume, its GPUs, its limits and the security
// posture every renter's container runs under. Kept pure and apart from the calls, so what a job is allowed reads
// in one place.
import type Docker from 'dockerode';
import { type ContainerSpec, JOB_CAPABILITIES } from './container-runtime.js';

export function containerCreateOptions(spec: ContainerSpec): Docker.ContainerCreateOptions {
  const bridge = spec.networkMode === 'bridge';
  const exposed: Record<string, object> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  if (bridge) {
    for (const binding of spec.portBindings) {
      const key = `${binding.containerPort}/tcp`;
      exposed[key] = {};
      bindings[key] = [...(bindings[key] ?? []), { HostIp: binding.hostIp ?? '0.0.0.0', HostPort: String(binding.hostPort) }];
    }
  }
  return {
    name: spec.name,
    Image: spec.image,
    Env: Object.entries(spec.env).map(([key, value]) => `${key}=${value}`),
    ...(spec.command !== undefined && spec.command.length > 0 ? { Cmd: [...spec.command] } : {}),
    Labels: spec.labels,
    ...(bridge ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      NetworkMode: spec.networkMode === 'bridge' && spec.networkName !== undefined ? spec.networkName : spec.networkMode,
      ...(bridge ? { PortBindings: bindings } : {}),
      Mounts: [{ Type: 'volume', Source: spec.volumeName, Target: spec.volumeMountPath }],
      // No GPU, no device request: an empty request would still ask for the nvidia runtime.
      ...(spec.gpuDeviceIds.length > 0
        ? { DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: [...spec.gpuDeviceIds], Capabilities: [['gpu']] }] }
        : {}),
      RestartPolicy: { Name: 'no' },
      // The renter's code is trusted no more than it must be: never privileged, no privilege gained through
      // setuid binaries, a reduced capability set (JOB_CAPABILITIES says what is kept and why).
      Privileged: false,
      SecurityOpt: ['no-new-privileges:true'],
      CapDrop: ['ALL'],
      CapAdd: [...JOB_CAPABILITIES],
      ...(spec.limits !== undefined
        ? {
            NanoCpus: spec.limits.nanoCpus,
            Memory: spec.limits.memoryBytes,
            // Equal to Memory: no swap on top of the limit, so a hog is stopped, not paged out onto the host.
            MemorySwap: spec.limits.memoryBytes,
            PidsLimit: spec.limits.pids,
          }
        : {}),
      ...(spec.runtime !== undefined ? { Runtime: spec.runtime } : {}),
      // Logs are read for failure details only; keep them from filling the disk.
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    },
  } as Docker.ContainerCreateOptions;
}
