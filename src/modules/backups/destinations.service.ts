import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { conflict, invalid } from '../../lib/errors.js';
import { encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { OutboundRefusedError, isOutboundRefused } from '../../lib/outbound.js';
import { audit, type BackupsCtx } from './backups.audit.js';
import { destinationView, SECRET_MASK } from './backups.presenters.js';
import { destinationRef } from './backups.resolvers.js';
import * as store from './backups.store.js';
import type { DestinationRow } from './backups.store.js';
import { checkEndpoint, secretAad, storageOf } from './destination-storage.js';
import { checkLocalDestinationPath, localDestinationDir } from './local-root.js';
import { describeFailure, refusedField } from './failures.js';
import type { Storage } from './storage.js';

/**
 * Backup destinations: a folder on the server (self-hosted only) or an S3-compatible bucket. Their
 * fields are checked here (paths, bucket names, endpoints), the S3 secret is sealed at rest, and a
 * destination in use by a policy or a kept run cannot be deleted.
 */

type Ctx = BackupsCtx;

export interface DestinationBody {
  name?: string;
  kind?: 'local' | 's3';
  path?: string;
  endpoint?: string | null;
  region?: string;
  bucket?: string;
  prefix?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
}

function checkDestinationFields(ctx: Pick<AppContext, 'config'>, kind: string, d: DestinationBody, creating: boolean): void {
  if (kind === 'local') {
    // A folder on the server is for the operator's own instance, not for tenants of a cloud instance.
    if (ctx.config.mode === 'cloud') throw invalid('kind', 'local destinations exist on self-hosted instances only; use an s3 destination');
    if (creating && !d.path) throw invalid('path', 'path is required for a local destination');
    if (d.path !== undefined) {
      checkLocalDestinationPath(ctx.config.localBackupRoot, d.path);
      const p = path.resolve(d.path);
      const data = path.resolve(ctx.config.dataDir);
      const inside = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
      if (inside(data, p) || inside(p, path.join(data, 'volumes'))) {
        throw invalid('path', 'path must not contain the data dir nor lie inside its volumes (backups would back themselves up)');
      }
    }
  } else {
    for (const f of ['bucket', 'accessKeyId', 'secretAccessKey'] as const) {
      if (creating && !d[f]) throw invalid(f, `${f} is required for an s3 destination`);
    }
    if (d.bucket !== undefined && !/^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$/.test(d.bucket)) throw invalid('bucket', 'bucket must be a valid bucket name (3-63 lowercase letters, digits, dots, hyphens)');
    if (d.endpoint) {
      let u: URL;
      try {
        u = new URL(d.endpoint);
      } catch {
        throw invalid('endpoint', 'endpoint must be an http(s) URL');
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid('endpoint', 'endpoint must be an http(s) URL');
      if (u.username || u.password) throw invalid('endpoint', 'endpoint must not contain credentials; use accessKeyId and secretAccessKey');
    }
    // With no endpoint the region names the AWS host (s3.<region>.amazonaws.com).
    if (d.region !== undefined && d.region !== '' && !/^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$/.test(d.region)) throw invalid('region', 'region must be a region name such as us-east-1');
    if (d.prefix !== undefined && d.prefix.split('/').includes('..')) throw invalid('prefix', 'prefix must not contain ".."');
  }
}

/** The destinations the actor may read (a restricted member's grants filter the list). */
export async function listDestinations(ctx: Ctx, actor: Actor) {
  const rows = await store.listDestinations(ctx.db, actor.orgId);
  return rows.filter((r) => can(actor, 'backup_destination:read', destinationRef(r))).map(destinationView);
}

export async function createDestination(ctx: Ctx, actor: Actor, body: DestinationBody & { name: string; kind: 'local' | 's3' }) {
  checkDestinationFields(ctx, body.kind, body, true);
  if (body.kind === 'local') await localDestinationDir(ctx.config.localBackupRoot, body.path!, { create: false });
  if (body.kind === 's3' && body.endpoint) await checkEndpoint(ctx, body.endpoint);
  const id = newId('bkd');
  const now = nowIso();
  const row: DestinationRow = {
    id,
    orgId: actor.orgId,
    name: body.name,
    kind: body.kind,
    path: body.kind === 'local' ? path.resolve(body.path!) : null,
    endpoint: body.kind === 's3' ? (body.endpoint ?? null) : null,
    region: body.kind === 's3' ? body.region || 'us-east-1' : null,
    bucket: body.kind === 's3' ? body.bucket! : null,
    prefix: body.kind === 's3' ? (body.prefix ?? '') : null,
    accessKeyId: body.kind === 's3' ? body.accessKeyId! : null,
    secretAccessKey: body.kind === 's3' ? encryptSecret(ctx.keyring, body.secretAccessKey!, secretAad(id)) : null,
    forcePathStyle: body.kind === 's3' && body.forcePathStyle ? 1 : 0,
    createdAt: now,
    updatedAt: now,
  };
  await store.insertDestination(ctx.db, row);
  await audit(ctx, actor, actor.orgId, 'backup_destination.create', 'backup_destination', id, { name: row.name, kind: row.kind });
  return destinationView(row);
}

export async function updateDestination(ctx: Ctx, actor: Actor, row: DestinationRow, body: DestinationBody) {
  if (body.kind !== undefined && body.kind !== row.kind) throw invalid('kind', 'kind cannot change; create a new destination');
  checkDestinationFields(ctx, row.kind, body, false);
  if (row.kind === 'local' && body.path !== undefined) await localDestinationDir(ctx.config.localBackupRoot, body.path, { create: false });
  if (row.kind === 's3' && body.endpoint) await checkEndpoint(ctx, body.endpoint);
  const set: Partial<DestinationRow> = { updatedAt: nowIso() };
  if (body.name !== undefined) set.name = body.name;
  if (row.kind === 'local') {
    if (body.path !== undefined) set.path = path.resolve(body.path);
  } else {
    if (body.endpoint !== undefined) set.endpoint = body.endpoint || null;
    if (body.region !== undefined) set.region = body.region || 'us-east-1';
    if (body.bucket !== undefined) set.bucket = body.bucket;
    if (body.prefix !== undefined) set.prefix = body.prefix;
    if (body.accessKeyId !== undefined) set.accessKeyId = body.accessKeyId;
    if (body.secretAccessKey !== undefined && body.secretAccessKey !== SECRET_MASK) {
      if (!body.secretAccessKey) throw invalid('secretAccessKey', 'secretAccessKey must not be empty');
      set.secretAccessKey = encryptSecret(ctx.keyring, body.secretAccessKey, secretAad(row.id));
    }
    if (body.forcePathStyle !== undefined) set.forcePathStyle = body.forcePathStyle ? 1 : 0;
  }
  await store.updateDestination(ctx.db, row.orgId, row.id, set);
  await audit(ctx, actor, row.orgId, 'backup_destination.update', 'backup_destination', row.id, { fields: Object.keys(body).filter((k) => k !== 'secretAccessKey' || set.secretAccessKey) });
  return destinationView({ ...row, ...set });
}

export async function deleteDestination(ctx: Ctx, actor: Actor, row: DestinationRow) {
  const use = await store.destinationUsage(ctx.db, row.orgId, row.id);
  if (use.policies > 0) throw conflict(`the destination is used by ${use.policies} backup polic${use.policies === 1 ? 'y' : 'ies'}; delete or move them first`);
  if (use.runs > 0) throw conflict(`the destination holds ${use.runs} backup run(s) that can still be restored; delete their policies' runs first`);
  await store.deleteDestination(ctx.db, row.orgId, row.id);
  await audit(ctx, actor, row.orgId, 'backup_destination.delete', 'backup_destination', row.id, { name: row.name });
  return { id: row.id, deleted: true };
}

/**
 * Writes, reads back and deletes a probe object. An endpoint that is (or now resolves to) an
 * internal address is a 400 naming `endpoint`, before any request; other failures answer
 * `ok: false` with an error in Berth's words (never the endpoint's own message or body).
 */
export async function testDestination(ctx: Ctx, row: DestinationRow) {
  if (row.kind === 's3' && row.endpoint) await checkEndpoint(ctx, row.endpoint);
  const started = Date.now();
  const key = `.berth-probe-${randomBytes(8).toString('hex')}`;
  const payload = randomBytes(1024);
  let storage: Storage;
  // Outside the try: a path that leaves the local backup root is the caller's 400, not a failed probe.
  if (row.kind === 'local') await localDestinationDir(ctx.config.localBackupRoot, row.path!);
  try {
    storage = await storageOf(ctx, row);
    const { Readable } = await import('node:stream');
    await storage.put(key, Readable.from([payload]));
    const back = await storage.get(key);
    const chunks: Buffer[] = [];
    for await (const c of back) chunks.push(c as Buffer);
    const same = Buffer.concat(chunks).equals(payload);
    await storage.delete(key);
    if (!same) return { ok: false, error: 'the probe object read back differs from what was written', latencyMs: Date.now() - started };
    return { ok: true, latencyMs: Date.now() - started };
  } catch (e) {
    // A host that moved to an internal address between the check above and a connection.
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    if (isOutboundRefused(e)) throw invalid('endpoint', 'endpoint points to an internal address; Berth does not connect there unless BERTH_OUTBOUND_ALLOW lists it');
    ctx.log.info({ destinationId: row.id, errName: (e as Error)?.name, status: (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode }, 'backup destination test failed');
    return { ok: false, error: describeFailure(e), latencyMs: Date.now() - started };
  }
}
