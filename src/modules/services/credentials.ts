/** A managed service's generated credentials: sealed at rest, revealed only to project admins. */
import { randomBytes } from 'node:crypto';
import type { Keyring } from '../../lib/crypto.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import type { ServiceKind } from './kinds.js';

export interface Credentials {
  username: string;
  password: string;
  /** The database made on first start (SQL kinds); `0` for Redis. */
  database: string;
}

const aad = (serviceId: string) => `managed-service:${serviceId}`;

/** A database/user name from the service's name (`my-db` -> `my_db`). */
export function databaseName(name: string): string {
  return name.replace(/-/g, '_');
}

export function generateCredentials(kind: ServiceKind, name: string): Credentials {
  // base64url without `-`/`_` edge cases in URLs: hex is safe in every client's URL parser.
  const password = randomBytes(24).toString('hex');
  if (kind === 'redis') return { username: 'default', password, database: '0' };
  return { username: 'app', password, database: databaseName(name) };
}

export function sealCredentials(ring: Keyring, serviceId: string, c: Credentials): string {
  return encryptSecret(ring, JSON.stringify(c), aad(serviceId));
}

export function openCredentials(ring: Keyring, serviceId: string, sealed: string): Credentials {
  return JSON.parse(decryptSecret(ring, sealed, aad(serviceId))) as Credentials;
}

/** The URL an app connects with (`postgres://`, `mysql://`, `redis://`, `mongodb://`). */
export function connectionUrl(kind: ServiceKind, c: Credentials, host: string, port: number): string {
  const u = encodeURIComponent(c.username);
  const p = encodeURIComponent(c.password);
  switch (kind) {
    case 'postgres':
      return `postgres://${u}:${p}@${host}:${port}/${c.database}`;
    case 'mysql':
      return `mysql://${u}:${p}@${host}:${port}/${c.database}`;
    case 'redis':
      return `redis://${u}:${p}@${host}:${port}/0`;
    case 'mongodb':
      return `mongodb://${u}:${p}@${host}:${port}/${c.database}?authSource=admin`;
  }
}
