import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import * as crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (pw: string | Buffer, salt: Buffer, keylen: number, opts: object) => Promise<Buffer>;

/** One-shot `crypto.hash` (Node >= 20.12) is several times cheaper than a Hash object for short inputs. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Buffer, encoding: 'hex') => string }).hash;

export function sha256Hex(input: string | Buffer): string {
  return oneShot ? oneShot('sha256', input, 'hex') : createHash('sha256').update(input).digest('hex');
}

export function hmacSha256Hex(key: string | Buffer, input: string | Buffer): string {
  return createHmac('sha256', key).update(input).digest('hex');
}

/**
 * Constant-time comparison of two strings of any length: both sides are hashed first so that
 * timingSafeEqual always sees equal-length buffers (it throws otherwise).
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

// ---------------------------------------------------------------- passwords (scrypt)

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  // Always do the work, so that a missing user costs the same time as a wrong password.
  const parts = (stored ?? '').split('$');
  const valid = parts.length === 6 && parts[0] === 'scrypt';
  const N = valid ? Number(parts[1]) : SCRYPT.N;
  const r = valid ? Number(parts[2]) : SCRYPT.r;
  const p = valid ? Number(parts[3]) : SCRYPT.p;
  const salt = valid ? Buffer.from(parts[4]!, 'base64') : randomBytes(16);
  const expected = valid ? Buffer.from(parts[5]!, 'base64') : randomBytes(SCRYPT.keylen);
  const key = await scrypt(password, salt, expected.length, { N, r, p, maxmem: 64 * 1024 * 1024 });
  return timingSafeEqual(key, expected) && valid;
}

// ---------------------------------------------------------------- secrets at rest (AES-256-GCM)

export interface SecretKey {
  id: string;
  key: Buffer;
}

export class Keyring {
  readonly current: SecretKey;
  private readonly byId = new Map<string, SecretKey>();

  constructor(current: Buffer, previous: Buffer[] = []) {
    this.current = Keyring.entry(current);
    this.byId.set(this.current.id, this.current);
    for (const k of previous) {
      const e = Keyring.entry(k);
      if (!this.byId.has(e.id)) this.byId.set(e.id, e);
    }
  }

  static entry(key: Buffer): SecretKey {
    if (key.length !== 32) throw new Error('secret key must be 32 bytes');
    return { id: sha256Hex(key).slice(0, 8), key };
  }

  get(id: string): SecretKey | undefined {
    return this.byId.get(id);
  }
}

/**
 * Encrypts `plaintext` with AES-256-GCM under the keyring's current key. `aad` binds the
 * ciphertext to its owner and name (e.g. `env:<projectId>:<environment>:<KEY>`), so a value
 * copied to another row does not decrypt. Format: `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url).
 */
export function encryptSecret(ring: Keyring, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return ['v1', ring.current.id, iv.toString('base64url'), tag.toString('base64url'), ct.toString('base64url')].join('.');
}

export function decryptSecret(ring: Keyring, sealed: string, aad: string): string {
  const parts = sealed.split('.');
  if (parts.length !== 5 || parts[0] !== 'v1') throw new Error('unrecognised secret format');
  const key = ring.get(parts[1]!);
  if (!key) throw new Error(`no key with id ${parts[1]} in the keyring`);
  const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(parts[2]!, 'base64url'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(parts[3]!, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(parts[4]!, 'base64url')), decipher.final()]).toString('utf8');
}
