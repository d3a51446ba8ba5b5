import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, conflict, notFound } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries, projectTransfers, type ProjectRow } from '../projects/index.js';
import { bundleDigest, bundleFromRows, bundleSummary, checkBundle, readBundleRows, writeBundle } from './bundle.js';
import { deleteCloudCopy, fromCloud, pullSourceArchive, pushSourceArchive, readCloudCopy, requireLink } from './cloud-copy.js';
import { deleteCloudLink, findCloudLink, insertCloudLink } from './cloud.store.js';
import { linkJson, unreachable } from './link.js';
import { sourceArchivePath } from './source.js';

/**
 * Transfers of a self-hosted instance's project: to the cloud and back, each one copy, verify by
 * digest, flip (docs/cloud.md). The cloud's side of them is bundle-exchange.service.ts.
 */

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
  const rows = await readBundleRows(ctx.db, row.orgId, row.id);
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
      const now = await readBundleRows(tx, row.orgId, row.id);
      if (!now) throw notFound('project');
      if (now.project.location !== 'local') throw conflict('the project already lives on the cloud');
      if (bundleDigest(bundleFromRows(ctx.keyring, now)) !== digest) throw conflict('the project changed while it was being transferred; try again');
      await projectTransfers.updateTransferredProject(tx, row.orgId, row.id, { location: 'cloud', updatedAt: nowIso() });
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
  const rt = ctx.ports.runtime;
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
  const held = await projectTransfers.findDomainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), row.id);
  if (held.length) throw conflict(`another project on this instance holds the domain ${held[0]}`, 'domains');
  // The source archive first: it is staged and attached to the local record (not served while the
  // record is `cloud`), and the digest below covers its hash.
  if (bundle.sourceArchive) await pullSourceArchive(ctx, actor, row, cloudId, bundle.sourceArchive.sha256, requestId);

  await transaction(ctx.db, async (tx) => {
    const current = await projectQueries.findProject(tx, row.orgId, row.id);
    if (!current) throw notFound('project');
    if (current.location !== 'cloud') throw conflict('the project already lives on this instance');
    await writeBundle(tx, ctx.keyring, bundle, { orgId: row.orgId, projectId: row.id, slug: row.slug, location: 'local', now: nowIso(), replace: true, domainVerification: ctx.config.domainVerification });
    const back = await readBundleRows(tx, row.orgId, row.id);
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

