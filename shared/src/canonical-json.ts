/**
 * JSON with object keys sorted and undefined members left out (as JSON.stringify does), so equal values always
 * give equal text: request hashes, manifest hashes and change detection rely on it, so its output for any parsed
 * JSON value never changes. Written with string appends, not intermediate arrays: it runs on every idempotent request.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // A hole or undefined is written as JSON.stringify writes it: null.
      out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    if (out.length > 1) out += ',';
    out += JSON.stringify(key);
    out += ':';
    out += canonicalJson(member);
  }
  return `${out}}`;
}
