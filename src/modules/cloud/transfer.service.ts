import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, conflict, ERROR_STATUS, notFound, type ErrorCode } from '../../lib/errors.js';
import { newId, nowIso, randomString } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import type { ProjectRow } from '../projects/projects.store.js';
import { getRuntimePort } from '../projects/runtime-port.js';
import { slugify } from '../projects/validate.js';
import {
  bundleDigest,
  bundleFromRows,
  bundleSummary,
  checkBundle,
  newRecipientKey,
  openBundle,
  sealBundle,
  writeBundle,
  type Bundle,
  type SealedBundle,
} from './bundle.js';
import {
  deleteCloudLink,
  domainsHeldElsewhere,
  findCloudLink,
  insertCloudLink,
  projectIdTaken,
  readProjectRows,
  slugTaken,
} from './cloud.store.js';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import { cloudLink, describeNetworkError, linkJson, linkRequest, unreachable, type LinkResponse } from './link.js';
import { receiveSourceArchive, sourceArchivePath } from './source.js';

/** An error answer of the cloud, turned into one of ours: its code when we have it, else 503. */
function fromCloud(res: LinkResponse, doing: string): AppError {
  const code = res.body?.error?.code as string | undefined;
  const message = typeof res.body?.error?.message === 'string' ? res.body.error.message : `status ${res.status}`;
  if (code && code in ERROR_STATUS && code !== 'INTERNAL' && code !== 'UNAUTHENTICATED' && res.status < 500) {
    return new AppError(code as ErrorCode, `the cloud refused to ${doing}: ${message}`);
  }
  return unreachable(`it failed to ${doing} (${message})`);
}

function requireLink(ctx: AppContext): void {
  if (!cloudLink(ctx)) throw unreachable('this instance has no cloud link (set BERTH_CLOUD_URL and BERTH_CLOUD_TOKEN)');
}

/** Reads a project's copy on the cloud back, sealed to a one-time key, and opens it in memory. */
async function readCloudCopy(ctx: AppContext, cloudId: string, requestId?: string): Promise<Bundle> {
  const key = newRecipientKey();
  const res = await linkJson<{ data: SealedBundle }>(ctx, 'POST', `/api/projects/${encodeURIComponent(cloudId)}/export`, { recipientKey: key.publicKey }, {
    timeoutMs: 120_000,
    requestId,
  });
  if (res.status === 404) throw conflict('the cloud has no copy of this project (was it deleted there?)');
  if (res.status !== 200 || !res.body?.data?.bundle) throw fromCloud(res, 'read the project back');
  try {
    return openBundle(res.body.data, key);
  } catch {
    throw unreachable('its copy of the project could not be opened (sealed to another key or altered on the way)');
  }
}

/** Streams the local source archive to the cloud copy (which keeps its config as it is). */
async function pushSourceArchive(ctx: AppContext, cloudId: string, file: string, sha256: string, requestId?: string): Promise<void> {
  const link = cloudLink(ctx)!;
  const size = (await stat(file)).size;
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, `${link.url}/api/projects/${encodeURIComponent(cloudId)}/source-archive?sha256=${sha256}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${link.token}`,
        'content-type': 'application/gzip',
        'content-length': String(size),
        ...(requestId ? { 'x-request-id': requestId } : {}),
      },
      body: createReadStream(file),
      signal: AbortSignal.timeout(30 * 60_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  const text = await res.body.text().catch(() => '');
  if (res.statusCode !== 200) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    throw fromCloud({ status: res.statusCode, body }, 'take the project\'s source archive');
  }
}

/** Streams the cloud copy's source archive into this instance as the project's uploaded source. */
async function pullSourceArchive(ctx: AppContext, actor: Actor, row: ProjectRow, cloudId: string, sha256: string, requestId?: string): Promise<void> {
  const link = cloudLink(ctx)!;
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, `${link.url}/api/projects/${encodeURIComponent(cloudId)}/source-archive`, {
      method: 'GET',
      headers: { authorization: `Bearer ${link.token}`, ...(requestId ? { 'x-request-id': requestId } : {}) },
      signal: AbortSignal.timeout(30 * 60_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  if (res.statusCode !== 200) {
    const text = await res.body.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    throw fromCloud({ status: res.statusCode, body }, 'send the project\'s source archive');
  }
  try {
    await receiveSourceArchive(ctx, actor, row.orgId, row.id, res.body, sha256);
  } catch (e) {
    res.body.destroy();
    if (e instanceof AppError) throw e;
    throw unreachable(`the source archive did not arrive whole (${describeNetworkError(e)})`);
  }
}

/** Deletes a project on the cloud; true when it is gone (or was never there). */
async function deleteCloudCopy(ctx: AppContext, cloudId: string, requestId?: string): Promise<boolean> {
  try {
    const res = await linkJson(ctx, 'DELETE', `/api/projects/${encodeURIComponent(cloudId)}`, undefined, { timeoutMs: 30_000, requestId });
    return (res.status >= 200 && res.status < 300) || res.status === 404;
  } catch {
    return false;
  }
}

export interface TransferResult {
  id: string;
  location: 'local' | 'cloud';
  cloudProjectId: string;
  /** Names and counts of what moved (never values). */
  transferred: ReturnType<typeof bundleSummary>;
  verified: true;
  /** to-self-hosted: whether the cloud copy was deleted after the local one was verified. */
  cloudCopyDeleted?: boolean;
}

/**
 * POST /api/projects/:id/transfer/to-cloud. Copies the project to the cloud in one atomic import,
 * reads the copy back and compares digests (secret values included, compared only in memory), then
 * flips the local record to `location: "cloud"` and records the id mapping. Any failure leaves the
 * local project as it was and deletes what was made on the cloud.
 */
export async function transferToCloud(ctx: AppContext, actor: Actor, row: ProjectRow, requestId?: string): Promise<TransferResult> {
  if (row.location === 'cloud') throw conflict('the project already lives on the cloud');
  requireLink(ctx);
  if (row.sourceType === 'local') {
    throw conflict('a project whose source is a folder on this host cannot move to the cloud: deploy it by folder upload first', 'source');
  }
  const rows = await readProjectRows(ctx.db, row.orgId, row.id);
  if (!rows) throw notFound('project');
  const bundle = bundleFromRows(ctx.keyring, rows);
  const digest = bundleDigest(bundle);
  const archive = bundle.sourceArchive ? await sourceArchivePath(ctx, row.orgId, row.id) : null;
  if (bundle.sourceArchive && !archive) throw conflict('the uploaded source of this project is missing on disk: upload the folder again first', 'source');

  const created = await linkJson<{ data: { id: string } }>(ctx, 'POST', '/api/projects/import-bundle', { bundle }, { timeoutMs: 120_000, requestId });
  if (created.status !== 201 || typeof created.body?.data?.id !== 'string') throw fromCloud(created, 'create the project');
  const cloudId = created.body.data.id;

  const undo = async (reason: AppError | unknown): Promise<never> => {
    const removed = await deleteCloudCopy(ctx, cloudId, requestId);
    if (!removed) ctx.log.error({ projectId: row.id, cloudProjectId: cloudId }, 'transfer to the cloud failed and its half-made copy could not be deleted there');
    await insertAuditEvent(ctx.db, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.transfer.to_cloud.failed',
      resourceType: 'project',
      resourceId: row.id,
      details: { cloudProjectId: cloudId, cloudCopyDeleted: removed, reason: reason instanceof AppError ? reason.code : 'INTERNAL' },
    }).catch(() => {});
    throw reason;
  };

  try {
    if (archive && bundle.sourceArchive) await pushSourceArchive(ctx, cloudId, archive, bundle.sourceArchive.sha256, requestId);
    const copy = await readCloudCopy(ctx, cloudId, requestId);
    if (bundleDigest(copy) !== digest) throw unreachable('its copy of the project does not match this one (digest mismatch); nothing was changed here');
    await transaction(ctx.db, async (tx) => {
      const now = await readProjectRows(tx, row.orgId, row.id);
      if (!now) throw notFound('project');
      if (now.project.location !== 'local') throw conflict('the project already lives on the cloud');
      if (bundleDigest(bundleFromRows(ctx.keyring, now)) !== digest) throw conflict('the project changed while it was being transferred; try again');
      await tx.updateTable('projects').set({ location: 'cloud', updatedAt: nowIso() }).where('orgId', '=', row.orgId).where('id', '=', row.id).execute();
      await insertCloudLink(tx, { projectId: row.id, orgId: row.orgId, cloudProjectId: cloudId, createdAt: nowIso() });
      await insertAuditEvent(tx, {
        orgId: row.orgId,
        actorId: actor.userId,
        action: 'project.transfer.to_cloud',
        resourceType: 'project',
        resourceId: row.id,
        details: { cloudProjectId: cloudId, ...bundleSummary(bundle) },
      });
    });
  } catch (e) {
    return undo(e);
  }
  // The app this instance ran for the project stops: the cloud serves it now.
  const rt = getRuntimePort();
  if (rt) await rt.takeOffline(ctx, row.orgId, row.id).catch((e) => ctx.log.warn({ err: e, projectId: row.id }, 'could not stop the local app of a project moved to the cloud'));
  return { id: row.id, location: 'cloud', cloudProjectId: cloudId, transferred: bundleSummary(bundle), verified: true };
}

/**
 * POST /api/projects/:id/transfer/to-self-hosted. Reads the cloud copy (secrets sealed to a
 * one-time key), writes it over the local record in one transaction, verifies the local copy
 * against the cloud's by digest inside that transaction, flips the record to `location: "local"`,
 * and only then deletes the cloud copy.
 */
export async function transferToSelfHosted(ctx: AppContext, actor: Actor, row: ProjectRow, requestId?: string): Promise<TransferResult> {
  if (row.location !== 'cloud') throw conflict('the project already lives on this instance');
  requireLink(ctx);
  const link = await findCloudLink(ctx.db, row.orgId, row.id);
  const cloudId = link?.cloudProjectId ?? row.id;
  const bundle = await readCloudCopy(ctx, cloudId, requestId);
  checkBundle(bundle);
  const digest = bundleDigest(bundle);
  const held = await domainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), row.id);
  if (held.length) throw conflict(`another project on this instance holds the domain ${held[0]}`, 'domains');
  // The source archive first: it is staged and attached to the local record (not served while the
  // record is `cloud`), and the digest below covers its hash.
  if (bundle.sourceArchive) await pullSourceArchive(ctx, actor, row, cloudId, bundle.sourceArchive.sha256, requestId);

  await transaction(ctx.db, async (tx) => {
    const current = await tx.selectFrom('projects').select(['location']).where('orgId', '=', row.orgId).where('id', '=', row.id).executeTakeFirst();
    if (!current) throw notFound('project');
    if (current.location !== 'cloud') throw conflict('the project already lives on this instance');
    await writeBundle(tx, ctx.keyring, bundle, { orgId: row.orgId, projectId: row.id, slug: row.slug, location: 'local', now: nowIso(), replace: true });
    const back = await readProjectRows(tx, row.orgId, row.id);
    if (!back || bundleDigest(bundleFromRows(ctx.keyring, back)) !== digest) {
      throw new AppError('INTERNAL', 'the local copy does not match the cloud copy; nothing was changed');
    }
    await deleteCloudLink(tx, row.orgId, row.id);
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.transfer.to_self_hosted',
      resourceType: 'project',
      resourceId: row.id,
      details: { cloudProjectId: cloudId, ...bundleSummary(bundle) },
    });
  }).catch((e) => {
    if (isUniqueViolation(e)) throw conflict('another project on this instance holds one of the project\'s domains', 'domains');
    throw e;
  });

  const deleted = await deleteCloudCopy(ctx, cloudId, requestId);
  if (!deleted) {
    ctx.log.warn({ projectId: row.id, cloudProjectId: cloudId }, 'project is back on this instance; its cloud copy could not be deleted yet');
    await insertAuditEvent(ctx.db, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.transfer.cloud_copy_left',
      resourceType: 'project',
      resourceId: row.id,
      details: { cloudProjectId: cloudId },
    });
  }
  return { id: row.id, location: 'local', cloudProjectId: cloudId, transferred: bundleSummary(bundle), verified: true, cloudCopyDeleted: deleted };
}

// ---------------------------------------------------------------- the cloud side

export function cloudOnly(ctx: AppContext): void {
  if (ctx.config.mode !== 'cloud') throw new AppError('NOT_FOUND', 'route not found');
}

const ID_RE = /^prj_[a-z0-9]{20}$/;

/**
 * POST /api/projects/import-bundle (cloud only): creates a project from a bundle in one transaction.
 * Keeps the bundle's project id when it is well-formed and free on this instance (so that ids
 * stay the same on both sides), and its slug when free. A domain held by another project is 409.
 */
export async function importBundle(ctx: AppContext, actor: Actor, bundle: Bundle): Promise<{ id: string; slug: string }> {
  cloudOnly(ctx);
  checkBundle(bundle);
  const held = await domainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), null);
  if (held.length) throw conflict(`another project holds the domain ${held[0]}`, 'domains');
  for (let attempt = 0; ; attempt++) {
    const id = attempt === 0 && ID_RE.test(bundle.project.id) && !(await projectIdTaken(ctx.db, bundle.project.id)) ? bundle.project.id : newId('prj');
    const base = slugify(bundle.project.slug);
    const slug = attempt === 0 && !(await slugTaken(ctx.db, base)) ? base : `${base.slice(0, 33)}-${randomString(6)}`;
    try {
      await transaction(ctx.db, async (tx) => {
        await writeBundle(tx, ctx.keyring, bundle, { orgId: actor.orgId, projectId: id, slug, location: 'local', now: nowIso(), replace: false });
        await insertAuditEvent(tx, {
          orgId: actor.orgId,
          actorId: actor.userId,
          action: 'project.import',
          resourceType: 'project',
          resourceId: id,
          details: { name: bundle.project.name, slug, ...bundleSummary(bundle) },
        });
      });
      return { id, slug };
    } catch (e) {
      if (isUniqueViolation(e) && attempt < 3) {
        const again = await domainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), null);
        if (again.length) throw conflict(`another project holds the domain ${again[0]}`, 'domains');
        continue;
      }
      throw e;
    }
  }
}

/**
 * POST /api/projects/:id/export (cloud only, project:admin): the project's bundle with every secret
 * value sealed to the caller's one-time X25519 key. Never answers a secret in clear.
 */
export async function exportBundle(ctx: AppContext, actor: Actor, row: ProjectRow, recipientKey: string): Promise<SealedBundle> {
  cloudOnly(ctx);
  const rows = await readProjectRows(ctx.db, row.orgId, row.id);
  if (!rows) throw notFound('project');
  const sealed = sealBundle(bundleFromRows(ctx.keyring, rows), recipientKey);
  await insertAuditEvent(ctx.db, {
    orgId: row.orgId,
    actorId: actor.userId,
    action: 'project.export',
    resourceType: 'project',
    resourceId: row.id,
    details: bundleSummary(sealed.bundle),
  });
  return sealed;
}
