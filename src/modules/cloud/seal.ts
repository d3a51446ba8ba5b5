import { createCipheriv, createDecipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { invalid } from '../../lib/errors.js';
import type { Bundle } from './bundle.schema.js';

/**
 * Secret values leave the cloud only sealed to a one-time X25519 key of the instance that asked:
 * ECDH with a one-time key of the cloud, HKDF-SHA256 (salt: both public keys), AES-256-GCM per
 * value with the value's place as AAD. A log line, proxy or cache that sees the export answer sees
 * no secret; only the process holding the private key (in memory, for one transfer) can open them.
 */
const SEAL_INFO = Buffer.from('berth-export-v1');

export interface RecipientKey {
  /** base64url raw X25519 public key, sent with the export request. */
  publicKey: string;
  privateKey: KeyObject;
}

export function newRecipientKey(): RecipientKey {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return { publicKey: publicKey.export({ format: 'jwk' }).x!, privateKey };
}

function publicKeyFromRaw(x: string): KeyObject {
  if (!/^[A-Za-z0-9_-]{43}$/.test(x)) throw invalid('recipientKey', 'recipientKey must be a base64url X25519 public key (43 characters)');
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x }, format: 'jwk' });
  } catch {
    throw invalid('recipientKey', 'recipientKey is not a valid X25519 public key');
  }
}

function sealKey(shared: Buffer, senderPub: string, recipientPub: string): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(`${senderPub}.${recipientPub}`), SEAL_INFO, 32));
}

export interface SealedBundle {
  bundle: Bundle;
  sealing: { alg: 'X25519-HKDF-SHA256-A256GCM'; senderKey: string; recipientKey: string };
}

const ENV_PLACE = (e: { environment: string; key: string }) => `env:${e.environment}:${e.key}`;

/** Returns a copy of `b` whose env values, service URLs and clone token are sealed to `recipientKey`. */
export function sealBundle(b: Bundle, recipientKey: string): SealedBundle {
  const recipient = publicKeyFromRaw(recipientKey);
  const sender = generateKeyPairSync('x25519');
  const senderPub = sender.publicKey.export({ format: 'jwk' }).x!;
  const key = sealKey(diffieHellman({ privateKey: sender.privateKey, publicKey: recipient }), senderPub, recipientKey);
  const seal = (value: string, place: string) => {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(Buffer.from(place));
    const ct = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return `s1.${iv.toString('base64url')}.${c.getAuthTag().toString('base64url')}.${ct.toString('base64url')}`;
  };
  return {
    bundle: {
      ...b,
      env: b.env.map((e) => ({ ...e, value: seal(e.value, ENV_PLACE(e)) })),
      services: b.services.map((s) => ({ ...s, connectionUrl: s.connectionUrl === null ? null : seal(s.connectionUrl, `service:${s.name}`) })),
      cloneCredential: b.cloneCredential ? { ...b.cloneCredential, token: seal(b.cloneCredential.token, 'clone-token') } : null,
    },
    sealing: { alg: 'X25519-HKDF-SHA256-A256GCM', senderKey: senderPub, recipientKey },
  };
}

/** Opens a sealed bundle with the private half of the one-time key. Throws on any tampering. */
export function openBundle(s: SealedBundle, recipient: RecipientKey): Bundle {
  if (s.sealing?.recipientKey !== recipient.publicKey) throw new Error('the export was sealed to another key');
  const sender = publicKeyFromRaw(s.sealing.senderKey);
  const key = sealKey(diffieHellman({ privateKey: recipient.privateKey, publicKey: sender }), s.sealing.senderKey, recipient.publicKey);
  const open = (sealed: string, place: string) => {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 's1') throw new Error('unrecognised sealed value');
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[1]!, 'base64url'));
    d.setAAD(Buffer.from(place));
    d.setAuthTag(Buffer.from(parts[2]!, 'base64url'));
    return Buffer.concat([d.update(Buffer.from(parts[3]!, 'base64url')), d.final()]).toString('utf8');
  };
  const b = s.bundle;
  return {
    ...b,
    env: b.env.map((e) => ({ ...e, value: open(e.value, ENV_PLACE(e)) })),
    services: b.services.map((x) => ({ ...x, connectionUrl: x.connectionUrl === null ? null : open(x.connectionUrl, `service:${x.name}`) })),
    cloneCredential: b.cloneCredential ? { ...b.cloneCredential, token: open(b.cloneCredential.token, 'clone-token') } : null,
  };
}
