// A machine's telemetry buckets as chart series: per GPU and metric, the min/avg/max of each 5-minute bucket.

type Summary = { min: number; avg: number; max: number };
interface Bucket {
  bucket: string;
  devices: Array<Record<string, unknown> & { pci_address: string }>;
  host?: Record<string, unknown>;
}

/** A machine without GPUs is charted by its host figures: CPU, load and memory (gpu -1 in the series). */
const HOST_METRICS: Array<{ metric: ChartMetric; field: string; label: string; unit: string; scale: number }> = [
  { metric: 'cpu', field: 'cpu_utilization_pct', label: 'CPU utilization', unit: '%', scale: 1 },
  { metric: 'load', field: 'load1', label: 'Load (1 min)', unit: 'load', scale: 1 },
  { metric: 'ram', field: 'memory_used_bytes', label: 'Memory used', unit: 'GiB', scale: 1 / 2 ** 30 },
];

/** The series of one metric over the buckets: `pick` finds a bucket's summary (none: no point). */
function seriesOf(
  head: Omit<ChartSeries, 't' | 'min' | 'avg' | 'max' | 'latest'>,
  scale: number,
  buckets: Bucket[],
  pick: (bucket: Bucket) => Summary | undefined,
): ChartSeries {
  const out: ChartSeries = { ...head, t: [], min: [], avg: [], max: [], latest: null };
  for (const bucket of buckets) {
    const value = pick(bucket);
    if (!value) continue;
    out.t.push(Math.floor(Date.parse(bucket.bucket) / 1000));
    out.min.push(round(value.min * scale));
    out.avg.push(round(value.avg * scale));
    out.max.push(round(value.max * scale));
    out.latest = { min: round(value.min * scale), avg: round(value.avg * scale), max: round(value.max * scale) };
  }
  return out;
}

export type ChartMetric = 'utilization' | 'temperature' | 'power' | 'memory' | 'cpu' | 'load' | 'ram';

const METRICS: Array<{ metric: ChartMetric; field: string; label: string; unit: string; scale: number }> = [
  { metric: 'utilization', field: 'utilization_pct', label: 'Utilization', unit: '%', scale: 1 },
  { metric: 'temperature', field: 'temperature_c', label: 'Temperature', unit: '°C', scale: 1 },
  { metric: 'power', field: 'power_watts', label: 'Power', unit: 'W', scale: 1 },
  { metric: 'memory', field: 'memory_used_bytes', label: 'Memory used', unit: 'GiB', scale: 1 / 2 ** 30 },
];

export interface ChartSeries {
  gpu: number;
  pci: string;
  model: string;
  metric: ChartMetric;
  label: string;
  unit: string;
  /** Bucket starts, Unix seconds, oldest first; the three arrays below line up with it. */
  t: number[];
  min: number[];
  avg: number[];
  max: number[];
  /** The newest bucket's values (what a page without scripts shows). */
  latest: Summary | null;
}

const round = (value: number) => Math.round(value * 100) / 100;

/**
 * One series per GPU of the manifest (in its order, then any other device the agent reported) and per metric;
 * a bucket without the metric leaves no point.
 */
export function telemetryCharts(
  machine: { manifest?: { gpus?: Array<{ pci_address: string; model: string }> } },
  buckets: Bucket[],
): ChartSeries[] {
  const gpus = [...(machine.manifest?.gpus ?? [])];
  const known = new Set(gpus.map((g) => g.pci_address));
  for (const bucket of buckets)
    for (const device of bucket.devices)
      if (!known.has(device.pci_address)) {
        known.add(device.pci_address);
        gpus.push({ pci_address: device.pci_address, model: 'unknown GPU' });
      }
  const series: ChartSeries[] = [];
  gpus.forEach((gpu, index) => {
    for (const m of METRICS) {
      const head = { gpu: index, pci: gpu.pci_address, model: gpu.model, metric: m.metric, label: m.label, unit: m.unit };
      series.push(
        seriesOf(
          head,
          m.scale,
          buckets,
          (bucket) => bucket.devices.find((d) => d.pci_address === gpu.pci_address)?.[m.field] as Summary | undefined,
        ),
      );
    }
  });
  if (gpus.length === 0) {
    for (const m of HOST_METRICS) {
      const head = { gpu: -1, pci: '', model: 'CPU and memory', metric: m.metric, label: m.label, unit: m.unit };
      series.push(seriesOf(head, m.scale, buckets, (bucket) => bucket.host?.[m.field] as Summary | undefined));
    }
  }
  return series;
}
