export type {
  CollectorLogger,
  GpuCollector,
  GpuDescription,
  GpuInventory,
  GpuInventorySource,
  GpuSample,
  HostCollector,
  HostSample,
} from './types.js';
export {
  MAX_GPUS_PER_SAMPLE,
  MAX_TEXT_CHARS,
  type NvidiaSmiReport,
  describeGpus,
  describeSample,
  normalisePciAddress,
  parseBytes,
  parseNvidiaSmiXml,
  parseQuantity,
  readNvidiaSmiLog,
  samplesFromNvidiaSmiLog,
} from './nvidia-smi-xml.js';
export {
  NVIDIA_SMI_OUTPUT_BYTES_MAX_DEFAULT,
  NVIDIA_SMI_TIMEOUT_MS_DEFAULT,
  NvidiaSmiGpuCollector,
  type NvidiaSmiGpuCollectorOptions,
} from './nvidia-smi-gpu-collector.js';
export { RecordedGpuCollector } from './recorded-gpu-collector.js';
export {
  SystemInformationHostCollector,
  type SystemInformationHostCollectorOptions,
} from './system-information-host-collector.js';
export {
  type GpuIdentity,
  type GpuIdentitySource,
  gpuIdentityFromNvidiaSmiLog,
  missingAssignedGpus,
  parseGpuIdentityXml,
} from './gpu-identity.js';
