// Whole-pull progress from Docker's pull stream: each layer counts its download and its extraction
// as halves, so a pull reads 100% only when every layer is in place.

/** One JSON object of the /images/create stream. */
export type PullEvent = {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
};

type LayerProgress = { downloaded: number; extracted: number };

/** Layers tracked at most; an image with more is still reported, with the excess ignored. */
const MAX_LAYERS = 512;

export class PullProgressTracker {
  private readonly layers = new Map<string, LayerProgress>();

  /** Applies one event; returns the new whole-pull percent (0..100). */
  apply(event: PullEvent): number {
    const id = event.id;
    const status = event.status ?? '';
    // Events without a layer id ("Pulling from", "Digest:", "Status:") carry no per-layer progress.
    if (id === undefined || !/^[0-9a-f]{6,}$/i.test(id)) return this.percent();
    let layer = this.layers.get(id);
    if (layer === undefined) {
      if (this.layers.size >= MAX_LAYERS) return this.percent();
      layer = { downloaded: 0, extracted: 0 };
      this.layers.set(id, layer);
    }
    const fraction = progressFraction(event);
    if (status === 'Already exists' || status === 'Pull complete') {
      layer.downloaded = 1;
      layer.extracted = 1;
    } else if (status === 'Download complete' || status === 'Verifying Checksum') {
      layer.downloaded = 1;
    } else if (status === 'Downloading' && fraction !== undefined) {
      layer.downloaded = Math.max(layer.downloaded, fraction);
    } else if (status === 'Extracting') {
      layer.downloaded = 1;
      if (fraction !== undefined) layer.extracted = Math.max(layer.extracted, fraction);
    }
    return this.percent();
  }

  percent(): number {
    if (this.layers.size === 0) return 0;
    let sum = 0;
    for (const layer of this.layers.values()) sum += (layer.downloaded + layer.extracted) / 2;
    return Math.min(100, Math.max(0, Math.floor((sum / this.layers.size) * 100)));
  }
}

function progressFraction(event: PullEvent): number | undefined {
  const current = event.progressDetail?.current;
  const total = event.progressDetail?.total;
  if (typeof current !== 'number' || typeof total !== 'number' || total <= 0) return undefined;
  return Math.min(1, Math.max(0, current / total));
}
