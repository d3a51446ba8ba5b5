import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random lowercase base36 string of `length` characters (unbiased). */
export function randomString(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (const b of bytes) {
      if (b < 252) out += ALPHABET[b % 36];
      if (out.length === length) break;
    }
  }
  return out;
}

/** App-made text id such as `prj_3k9x...`: a short type prefix and 20 random characters. */
export function newId(prefix: string): string {
  return `${prefix}_${randomString(20)}`;
}

/** URL-safe secret token with a readable prefix, e.g. `berth_pat_...`. */
export function newSecretToken(prefix: string, bytes = 32): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}

export function isoPlus(ms: number, from = Date.now()): string {
  return new Date(from + ms).toISOString();
}

const REQ_PREFIX = `req_${randomString(8)}`;
let reqCounter = 0;

/** Request ids: unique per process run (random prefix) and per request (counter); cheap. */
export function newRequestId(): string {
  reqCounter = (reqCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${REQ_PREFIX}${reqCounter.toString(36).padStart(6, '0')}`;
}
