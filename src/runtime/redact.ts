import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** What every redacted secret value is replaced with. */
export const MASK = '********';
const MASK_BYTES = Buffer.from(MASK);

/** Secret values shorter than this carry no secrecy worth mangling every log line for (documented in docs/runtime.md). */
export const MIN_SECRET_LENGTH = 3;

/** `\uXXXX` for every UTF-16 code unit above ASCII (what ASCII-only JSON encoders write: Python's default). */
function asciiEscape(s: string, upper: boolean): string {
  return s.replace(/[\u0080-\uffff]/g, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  });
}

/**
 * How a value looks inside a JSON string as common encoders write it: JavaScript's JSON.stringify
 * (`"`, `\` and control characters escaped), with `/` as `\/` (PHP), with non-ASCII as `\uXXXX`
 * (Python; lower and upper hex), and with `<`, `>`, `&` as `\u003c`, `\u003e`, `\u0026` (Go).
 */
export function jsonForms(s: string): string[] {
  const base = JSON.stringify(s).slice(1, -1);
  const slash = base.replace(/\//g, '\\/');
  const go = base.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return [base, slash, go, asciiEscape(base, false), asciiEscape(base, true), asciiEscape(slash, false), asciiEscape(slash, true), asciiEscape(go, false)];
}

/**
 * How a value looks URL-encoded: encodeURIComponent, the same with `+` for spaces, form encoding
 * (URLSearchParams), encodeURI; each also with lower-case hex escapes.
 */
export function urlForms(s: string): string[] {
  const out: string[] = [];
  try {
    const c = encodeURIComponent(s);
    out.push(c, c.replace(/%20/g, '+'), encodeURI(s));
  } catch {
    // A lone surrogate has no URL encoding; the form encoding below substitutes U+FFFD.
  }
  out.push(new URLSearchParams([['', s]]).toString().slice(1));
  const lower = out.map((f) => f.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  return [...out, ...lower];
}

/**
 * Every form of a value that redaction looks for: the value itself, its JSON-escaped and its
 * URL-encoded forms. A multi-line value (a PEM key) is also looked for line by line (raw and
 * encoded), and as a whole in its encoded forms (which have no newline: `\n`, `%0A`), so no
 * pattern spans a newline and output can flow at every line end.
 */
export function secretForms(v: string): string[] {
  const forms = new Set<string>();
  const add = (f: string) => {
    if (f.length >= MIN_SECRET_LENGTH && !f.includes('\n')) forms.add(f);
  };
  const parts = v.split(/\r?\n/).map((p) => p.replace(/\r$/, ''));
  const wholes = parts.length > 1 ? [v, ...parts] : parts;
  for (const w of wholes) {
    // A value (or line) too short to redact is not redacted in any form either.
    if (w.length < MIN_SECRET_LENGTH) continue;
    add(w);
    for (const f of jsonForms(w)) add(f);
    for (const f of urlForms(w)) add(f);
  }
  return [...forms];
}

/** The byte patterns to redact for a set of secret values (every form of each, `secretForms`). */
export function secretPatterns(values: Iterable<string>): Buffer[] {
  const set = new Set<string>();
  for (const v of values) {
    if (typeof v !== 'string') continue;
    for (const f of secretForms(v)) set.add(f);
  }
  // Longest first: a longer secret containing a shorter one wins at the same position.
  return [...set].sort((a, b) => Buffer.byteLength(b) - Buffer.byteLength(a)).map((s) => Buffer.from(s, 'utf8'));
}

/**
 * Incremental redactor over a byte stream: `push(chunk)` returns what is safe to emit now; bytes
 * that could be the start of a secret split across two writes are held back (at most the longest
 * secret's length - 1, and never past a newline since no pattern contains one).
 */
export class Redactor {
  private readonly patterns: Buffer[];
  private readonly maxLen: number;
  private tail: Buffer = Buffer.alloc(0);

  constructor(secrets: Iterable<string>) {
    this.patterns = secretPatterns(secrets);
    this.maxLen = this.patterns.reduce((m, p) => Math.max(m, p.length), 0);
  }

  get active(): boolean {
    return this.patterns.length > 0;
  }

  push(chunk: Buffer): Buffer {
    if (!this.active) return chunk;
    const buf = this.tail.length ? Buffer.concat([this.tail, chunk]) : chunk;
    return this.run(buf, false);
  }

  /** Emits what is held back (end of stream). */
  end(): Buffer {
    if (!this.active) return Buffer.alloc(0);
    const buf = this.tail;
    this.tail = Buffer.alloc(0);
    return this.run(buf, true);
  }

  /** Redacts a whole string at once (error messages, single lines). */
  redactString(s: string): string {
    if (!this.active) return s;
    const saved = this.tail;
    const out = this.run(Buffer.from(s, 'utf8'), true);
    this.tail = saved;
    return out.toString('utf8');
  }

  private run(buf: Buffer, final: boolean): Buffer {
    const out: Buffer[] = [];
    let pos = 0;
    // Bytes from `safeEnd` on may be the start of a secret that continues in the next write.
    let safeEnd = final ? buf.length : Math.max(0, buf.length - (this.maxLen - 1));
    if (!final) {
      const nl = buf.lastIndexOf(10);
      if (nl + 1 > safeEnd) safeEnd = nl + 1;
    }
    while (pos < buf.length) {
      let best = -1;
      let bestLen = 0;
      for (const p of this.patterns) {
        const idx = buf.indexOf(p, pos);
        if (idx >= 0 && (best < 0 || idx < best || (idx === best && p.length > bestLen))) {
          best = idx;
          bestLen = p.length;
        }
      }
      // A match that starts in the held-back region waits for the next write: a longer secret
      // starting earlier may still complete there.
      if (best >= 0 && (final || best < safeEnd)) {
        if (best > pos) out.push(buf.subarray(pos, best));
        out.push(MASK_BYTES);
        pos = best + bestLen;
        continue;
      }
      const emitTo = Math.max(pos, safeEnd);
      if (emitTo > pos) out.push(buf.subarray(pos, emitTo));
      pos = emitTo;
      break;
    }
    this.tail = final ? Buffer.alloc(0) : Buffer.from(buf.subarray(pos));
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }
}

/** A Transform that replaces every secret value with `********`, also across write boundaries. */
export class RedactStream extends Transform {
  private readonly r: Redactor;
  constructor(secrets: Iterable<string>) {
    super();
    this.r = new Redactor(secrets);
  }
  override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
    const out = this.r.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    if (out.length) this.push(out);
    cb();
  }
  override _flush(cb: TransformCallback): void {
    const out = this.r.end();
    if (out.length) this.push(out);
    cb();
  }
}

/** Redacts one string with a fixed set of secrets. */
export function redactText(s: string, secrets: Iterable<string>): string {
  return new Redactor(secrets).redactString(s);
}

/**
 * Splits a byte stream into lines (LF, CRLF; CR alone ends a progress line too); a line longer than
 * `maxLine` bytes is cut. Calls `onLine` for each; `end()` flushes the last partial line.
 */
export class LineSplitter {
  private partial = '';
  private readonly decoder = new StringDecoder('utf8');
  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLine = 16 * 1024,
  ) {}
  push(chunk: Buffer | string): void {
    const text = this.partial + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    const parts = text.split(/\r?\n|\r(?!$)/);
    this.partial = parts.pop() ?? '';
    for (const p of parts) this.onLine(p.length > this.maxLine ? p.slice(0, this.maxLine) : p);
    while (this.partial.length > this.maxLine) {
      this.onLine(this.partial.slice(0, this.maxLine));
      this.partial = this.partial.slice(this.maxLine);
    }
  }
  end(): void {
    const p = (this.partial + this.decoder.end()).replace(/\r$/, '');
    this.partial = '';
    if (p.length) this.onLine(p);
  }
}
