import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual, type Keyring } from '../../lib/crypto.js';

/**
 * The device cookie: marks a browser (or client) where an account signed in before, so that sign-in
 * failures from it are counted on their own (`auth.sessions.ts`, `docs/decisions.md`). Its value is
 * `<id>.<issued, epoch seconds>.<MAC>`, MACed with a key derived from the secret key.
 */
export const DEVICE_COOKIE = 'berth_device';
export const DEVICE_TTL_MS = 180 * 24 * 3600 * 1000;

function deviceMac(keyring: Keyring, userId: string, id: string, issued: string): string {
  // A key of its own, derived from the secret key, so a device cookie's MAC is nothing else's.
  const key = createHmac('sha256', keyring.current.key).update('berth device cookie v1').digest();
  return createHmac('sha256', key).update(`${userId}.${id}.${issued}`).digest('base64url');
}

/** A device cookie value for `userId`; `id` is kept on renewal. */
export function newDeviceToken(keyring: Keyring, userId: string, id = randomBytes(16).toString('base64url'), now = Date.now()): string {
  const issued = String(Math.floor(now / 1000));
  return `${id}.${issued}.${deviceMac(keyring, userId, id, issued)}`;
}

/** The device id of a valid, unexpired device cookie of `userId`, else null. */
export function verifyDeviceToken(keyring: Keyring, userId: string, token: string | undefined, now = Date.now()): string | null {
  if (!token || token.length > 200) return null;
  const [id, issued, mac, extra] = token.split('.');
  if (!id || !issued || !mac || extra !== undefined || !/^\d{1,12}$/.test(issued)) return null;
  if (now - Number(issued) * 1000 > DEVICE_TTL_MS) return null;
  return safeEqual(mac, deviceMac(keyring, userId, id, issued)) ? id : null;
}
