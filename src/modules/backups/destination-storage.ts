import type { AppContext } from '../../context.js';
import { decryptSecret } from '../../lib/crypto.js';
import { OutboundRefusedError, outboundPolicy } from '../../lib/outbound.js';
import type { DestinationRow } from './backups.store.js';
import { refusedField } from './failures.js';
import { openStorage, type DestinationConfig, type Storage } from './storage.js';

/**
 * A destination row to the storage it names: its sealed secret opened, and its S3 endpoint checked
 * against the outbound policy (an internal address is refused unless BERTH_OUTBOUND_ALLOW lists it).
 */

/** The AAD that binds a destination's sealed secret key to it. */
export const secretAad = (id: string) => `backup-destination:${id}:secretAccessKey`;

export function destinationConfig(ctx: Pick<AppContext, 'keyring'>, row: DestinationRow): DestinationConfig {
  if (row.kind === 'local') return { kind: 'local', path: row.path! };
  return {
    kind: 's3',
    endpoint: row.endpoint,
    region: row.region || 'us-east-1',
    bucket: row.bucket!,
    prefix: row.prefix ?? '',
    accessKeyId: row.accessKeyId ?? '',
    secretAccessKey: row.secretAccessKey ? decryptSecret(ctx.keyring, row.secretAccessKey, secretAad(row.id)) : '',
    forcePathStyle: row.forcePathStyle === 1,
  };
}

/**
 * Opens a destination. An S3 endpoint is checked again at every use (its host resolved and refused
 * when internal: src/lib/outbound.ts), and every connection the storage then opens is checked too.
 */
export async function storageOf(ctx: Pick<AppContext, 'keyring' | 'config'>, row: DestinationRow): Promise<Storage> {
  const policy = outboundPolicy(ctx.config.hardening.outboundAllow);
  if (row.kind === 's3' && row.endpoint) await policy.resolve(endpointHost(row.endpoint));
  return openStorage(destinationConfig(ctx, row), policy);
}

/** The host of an http(s) endpoint URL (WHATWG parsing: decimal, octal and hex IPv4 become dotted). */
function endpointHost(endpoint: string): string {
  try {
    return new URL(endpoint).hostname;
  } catch {
    throw new OutboundRefusedError('(unparsable URL)', 'invalid');
  }
}

/** The create/update check of an S3 endpoint: a 400 naming `endpoint` when it is (or resolves to) an internal address. */
export async function checkEndpoint(ctx: Pick<AppContext, 'config'>, endpoint: string): Promise<void> {
  try {
    await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(endpointHost(endpoint));
  } catch (e) {
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    throw e;
  }
}
