export {
  type ContainerRuntime,
  ContainerRuntimeError,
  type ContainerRuntimeErrorCode,
  type ContainerSpec,
  type ContainerLimits,
  type ContainerState,
  type ContainerUsage,
  type EngineIsolation,
  type ExecRequest,
  type ExecSession,
  type LogOptions,
  type NetworkMode,
  type PortBinding,
  type PulledImage,
  type PullOptions,
  JOB_CAPABILITIES,
} from './container-runtime.js';
export { containerUsageFromStats, engineIsolationFromInfo } from './docker-inspect.js';
export {
  DOCKER_CALL_TIMEOUT_MS_DEFAULT,
  DOCKER_PULL_STALL_TIMEOUT_MS_DEFAULT,
  DOCKER_PULL_TIMEOUT_MS_DEFAULT,
  DockerRuntime,
  type DockerRuntimeOptions,
} from './docker-runtime.js';
export { LazyDockerRuntime } from './lazy-docker-runtime.js';
export { demultiplex, demultiplexBuffer } from './docker-stream.js';
export { GpuAssignmentError, gpuDeviceIds } from './gpu-devices.js';
export {
  canonicalRepository,
  type DigestReference,
  formatDigestReference,
  parseDigestReference,
  repoDigestsMatch,
} from './image-reference.js';
export {
  canBind,
  PortAllocator,
  type PortAllocatorOptions,
  type PortRange,
  PortRangeExhaustedError,
  parsePortRange,
} from './port-allocator.js';
export { type PullEvent, PullProgressTracker } from './pull-progress.js';
