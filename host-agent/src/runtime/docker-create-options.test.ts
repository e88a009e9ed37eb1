import { describe, expect, it } from 'vitest';
import { type ContainerSpec, JOB_CAPABILITIES } from './container-runtime.js';
import { containerCreateOptions } from './docker-create-options.js';

const spec: ContainerSpec = {
  name: 'ark-job-1',
  image: `registry.example/train@sha256:${'a'.repeat(64)}`,
  labels: { 'ark.job': '1' },
  env: { MODEL: 'small', EMPTY: '' },
  volumeName: 'ark-job-1-data',
  volumeMountPath: '/workspace',
  networkMode: 'bridge',
  portBindings: [
    { containerPort: 22, hostPort: 40022, hostIp: '127.0.0.1' },
    { containerPort: 22, hostPort: 40023 },
  ],
  gpuDeviceIds: ['GPU-0a1b'],
};

describe('the create body of a job container', () => {
  it('publishes bridge ports, asks for the assigned GPUs by id and never for privilege', () => {
    const options = containerCreateOptions({
      ...spec,
      networkName: 'ark-jobs',
      limits: { nanoCpus: 2e9, memoryBytes: 2 ** 30, pids: 512 },
    });
    expect(options.Env).toEqual(['MODEL=small', 'EMPTY=']);
    expect(options.ExposedPorts).toEqual({ '22/tcp': {} });
    expect(options.HostConfig?.NetworkMode).toBe('ark-jobs');
    expect(options.HostConfig?.PortBindings).toEqual({
      '22/tcp': [
        { HostIp: '127.0.0.1', HostPort: '40022' },
        { HostIp: '0.0.0.0', HostPort: '40023' },
      ],
    });
    expect(options.HostConfig?.DeviceRequests).toEqual([{ Driver: 'nvidia', DeviceIDs: ['GPU-0a1b'], Capabilities: [['gpu']] }]);
    expect(options.HostConfig?.Privileged).toBe(false);
    expect(options.HostConfig?.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(options.HostConfig?.CapDrop).toEqual(['ALL']);
    expect(options.HostConfig?.CapAdd).toEqual([...JOB_CAPABILITIES]);
    // No swap above the memory limit.
    expect(options.HostConfig?.MemorySwap).toBe(options.HostConfig?.Memory);
    expect(options.HostConfig?.PidsLimit).toBe(512);
  });

  it('with host networking and no GPU: no ports, no device request, no Cmd, no limits, the engine default runtime', () => {
    const options = containerCreateOptions({ ...spec, networkMode: 'host', gpuDeviceIds: [], command: [] });
    expect(options).not.toHaveProperty('ExposedPorts');
    expect(options).not.toHaveProperty('Cmd');
    expect(options.HostConfig?.NetworkMode).toBe('host');
    expect(options.HostConfig).not.toHaveProperty('PortBindings');
    expect(options.HostConfig).not.toHaveProperty('DeviceRequests');
    expect(options.HostConfig).not.toHaveProperty('Memory');
    expect(options.HostConfig).not.toHaveProperty('Runtime');
    expect(options.HostConfig?.Mounts).toEqual([{ Type: 'volume', Source: 'ark-job-1-data', Target: '/workspace' }]);
  });
});
