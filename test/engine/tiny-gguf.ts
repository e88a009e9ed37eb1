// A tiny llama model in GGUF, generated for tests (no model hub here): two transformer blocks of random F32 weights
// (64-wide embeddings, 4 heads, a 128-wide feed-forward), a SentencePiece-style vocabulary of byte tokens plus the
// printable ASCII characters, about 400 KB. The weights come from a seeded generator, so the same seed gives the same
// file and, with greedy decoding, the same output for the same prompt. The output is gibberish, and that is fine: the
// tests exercise a real engine's loading, tokenizing, decoding and streaming, not its prose.
//
// Format: GGUF v3 (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): header, metadata key-values, tensor
// infos, then the tensor data aligned to 32 bytes. Tensor dims are listed innermost first (ne[0] is a row's length).
import { writeFile } from 'node:fs/promises';

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const GGUF_VERSION = 3;
const ALIGNMENT = 32;

enum ValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}
const GGML_TYPE_F32 = 0;

// llama.cpp's token types.
const TOKEN_NORMAL = 1;
const TOKEN_UNKNOWN = 2;
const TOKEN_CONTROL = 3;
const TOKEN_BYTE = 6;

export interface TinyModelShape {
  embedding: number;
  heads: number;
  blocks: number;
  feedForward: number;
  contextLength: number;
}

export const TINY_SHAPE: TinyModelShape = { embedding: 64, heads: 4, blocks: 2, feedForward: 128, contextLength: 1024 };

/** The vocabulary: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then each printable ASCII character. */
export function tinyVocabulary(): { tokens: string[]; types: number[]; printable: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL];
  for (let byte = 0; byte < 256; byte += 1) {
    tokens.push(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TOKEN_BYTE);
  }
  const printable: number[] = [];
  // SentencePiece writes a space as U+2581; letters, digits and punctuation as themselves.
  for (let code = 0x20; code < 0x7f; code += 1) {
    printable.push(tokens.length);
    tokens.push(code === 0x20 ? '\u2581' : String.fromCharCode(code));
    types.push(TOKEN_NORMAL);
  }
  return { tokens, types, printable };
}

/** mulberry32: a small seeded generator, uniform in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Writer {
  #chunks: Buffer[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  bytes(buffer: Buffer): void {
    this.#chunks.push(buffer);
    this.#length += buffer.length;
  }

  u32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value);
    this.bytes(b);
  }

  i32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(value);
    this.bytes(b);
  }

  u64(value: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(value));
    this.bytes(b);
  }

  f32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(value);
    this.bytes(b);
  }

  string(value: string): void {
    const encoded = Buffer.from(value, 'utf8');
    this.u64(encoded.length);
    this.bytes(encoded);
  }

  pad(alignment: number): void {
    const rest = this.#length % alignment;
    if (rest !== 0) this.bytes(Buffer.alloc(alignment - rest));
  }

  result(): Buffer {
    return Buffer.concat(this.#chunks, this.#length);
  }
}

type Metadata =
  | { type: ValueType.UINT32 | ValueType.FLOAT32; value: number }
  | { type: ValueType.BOOL; value: boolean }
  | { type: ValueType.STRING; value: string }
  | { type: ValueType.ARRAY; of: ValueType.STRING; value: string[] }
  | { type: ValueType.ARRAY; of: ValueType.FLOAT32 | ValueType.INT32; value: number[] };

function writeValue(w: Writer, entry: Metadata): void {
  w.u32(entry.type);
  switch (entry.type) {
    case ValueType.UINT32:
      w.u32(entry.value);
      return;
    case ValueType.FLOAT32:
      w.f32(entry.value);
      return;
    case ValueType.BOOL:
      w.bytes(Buffer.from([entry.value ? 1 : 0]));
      return;
    case ValueType.STRING:
      w.string(entry.value);
      return;
    case ValueType.ARRAY: {
      w.u32(entry.of);
      w.u64(entry.value.length);
      if (entry.of === ValueType.STRING) for (const item of entry.value as string[]) w.string(item);
      else if (entry.of === ValueType.FLOAT32) for (const item of entry.value as number[]) w.f32(item);
      else for (const item of entry.value as number[]) w.i32(item);
      return;
    }
  }
}

interface Tensor {
  name: string;
  /** Innermost first. */
  dims: number[];
  data: Float32Array;
}

/** The model file's bytes for `seed`. */
export function tinyLlamaGguf(seed = 20261124, shape: TinyModelShape = TINY_SHAPE): Buffer {
  const { tokens, types, printable } = tinyVocabulary();
  const random = seeded(seed);
  const vocab = tokens.length;
  const { embedding: d, feedForward: ff, heads, blocks } = shape;
  const matrix = (rows: number, columns: number, scale: number) => {
    const data = new Float32Array(rows * columns);
    for (let i = 0; i < data.length; i += 1) data[i] = (random() * 2 - 1) * scale;
    return data;
  };
  const ones = (n: number) => new Float32Array(n).fill(1);

  // The output projection: a row per token. Only the printable characters get weights; every other row is zero, so
  // under greedy decoding the engine always answers with readable ASCII (a zero logit never beats the largest of 95
  // random ones in practice) and never ends early on </s>.
  const output = new Float32Array(vocab * d);
  const printableRows = matrix(printable.length, d, 0.5);
  printable.forEach((token, i) => {
    output.set(printableRows.subarray(i * d, (i + 1) * d), token * d);
  });

  const tensors: Tensor[] = [
    { name: 'token_embd.weight', dims: [d, vocab], data: matrix(vocab, d, 1) },
    { name: 'output_norm.weight', dims: [d], data: ones(d) },
    { name: 'output.weight', dims: [d, vocab], data: output },
  ];
  const scale = 1 / Math.sqrt(d);
  for (let block = 0; block < blocks; block += 1) {
    const p = `blk.${block}`;
    tensors.push(
      { name: `${p}.attn_norm.weight`, dims: [d], data: ones(d) },
      { name: `${p}.attn_q.weight`, dims: [d, d], data: matrix(d, d, scale) },
      { name: `${p}.attn_k.weight`, dims: [d, d], data: matrix(d, d, scale) },
      { name: `${p}.attn_v.weight`, dims: [d, d], data: matrix(d, d, scale) },
      { name: `${p}.attn_output.weight`, dims: [d, d], data: matrix(d, d, scale) },
      { name: `${p}.ffn_norm.weight`, dims: [d], data: ones(d) },
      { name: `${p}.ffn_gate.weight`, dims: [d, ff], data: matrix(ff, d, scale) },
      { name: `${p}.ffn_up.weight`, dims: [d, ff], data: matrix(ff, d, scale) },
      { name: `${p}.ffn_down.weight`, dims: [ff, d], data: matrix(d, ff, 1 / Math.sqrt(ff)) },
    );
  }

  const metadata: Array<[string, Metadata]> = [
    ['general.architecture', { type: ValueType.STRING, value: 'llama' }],
    ['general.name', { type: ValueType.STRING, value: 'ark-test-tiny' }],
    ['general.alignment', { type: ValueType.UINT32, value: ALIGNMENT }],
    ['general.file_type', { type: ValueType.UINT32, value: 0 }],
    ['llama.context_length', { type: ValueType.UINT32, value: shape.contextLength }],
    ['llama.embedding_length', { type: ValueType.UINT32, value: d }],
    ['llama.block_count', { type: ValueType.UINT32, value: blocks }],
    ['llama.feed_forward_length', { type: ValueType.UINT32, value: ff }],
    ['llama.rope.dimension_count', { type: ValueType.UINT32, value: d / heads }],
    ['llama.attention.head_count', { type: ValueType.UINT32, value: heads }],
    ['llama.attention.head_count_kv', { type: ValueType.UINT32, value: heads }],
    ['llama.attention.layer_norm_rms_epsilon', { type: ValueType.FLOAT32, value: 1e-5 }],
    ['llama.vocab_size', { type: ValueType.UINT32, value: vocab }],
    ['tokenizer.ggml.model', { type: ValueType.STRING, value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: ValueType.ARRAY, of: ValueType.STRING, value: tokens }],
    ['tokenizer.ggml.scores', { type: ValueType.ARRAY, of: ValueType.FLOAT32, value: tokens.map(() => 0) }],
    ['tokenizer.ggml.token_type', { type: ValueType.ARRAY, of: ValueType.INT32, value: types }],
    ['tokenizer.ggml.unknown_token_id', { type: ValueType.UINT32, value: 0 }],
    ['tokenizer.ggml.bos_token_id', { type: ValueType.UINT32, value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: ValueType.UINT32, value: 2 }],
    ['tokenizer.ggml.add_bos_token', { type: ValueType.BOOL, value: true }],
    ['tokenizer.ggml.add_eos_token', { type: ValueType.BOOL, value: false }],
  ];

  const w = new Writer();
  w.u32(GGUF_MAGIC);
  w.u32(GGUF_VERSION);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) {
    w.string(key);
    writeValue(w, value);
  }
  let offset = 0;
  for (const tensor of tensors) {
    w.string(tensor.name);
    w.u32(tensor.dims.length);
    for (const dim of tensor.dims) w.u64(dim);
    w.u32(GGML_TYPE_F32);
    w.u64(offset);
    offset += Math.ceil(tensor.data.byteLength / ALIGNMENT) * ALIGNMENT;
  }
  w.pad(ALIGNMENT);
  for (const tensor of tensors) {
    w.bytes(Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
    w.pad(ALIGNMENT);
  }
  return w.result();
}

export async function writeTinyLlamaGguf(path: string, seed?: number): Promise<void> {
  await writeFile(path, tinyLlamaGguf(seed));
}
