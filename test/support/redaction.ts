import { Redactor } from '../../src/runtime/redact.js';

/** Streams `chunks` through one Redactor of `secrets`, as a build or app's output would, and answers the text. */
export function feed(secrets: string[], chunks: (string | Buffer)[]): string {
  const r = new Redactor(secrets);
  const out: Buffer[] = [];
  for (const c of chunks) out.push(r.push(typeof c === 'string' ? Buffer.from(c) : c));
  out.push(r.end());
  return Buffer.concat(out).toString('utf8');
}

/** `bytes` cut at the given offsets (taken modulo its length + 1, deduplicated): the writes of a property test. */
export function cutAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(prev, p));
    prev = p;
  }
  chunks.push(bytes.subarray(prev));
  return chunks;
}
