import { rm } from 'node:fs/promises';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, conflict, notFound } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries, projectTransfers, type ProjectRow } from '../projects/index.js';
import { discardServiceRows, newServiceRows, parkServices, planServices, prepareServiceData, startServices, whyNoData, writeServices, type WrittenServices } from '../services/index.js';
import { bundleDigest, bundleFromRows, bundleSummary, checkBundle, readBundleRows, writeBundle } from './bundle.js';
import { deleteCloudCopy, fromCloud, pullSourceArchive, pushSourceArchive, readCloudCopy, requireLink } from './cloud-copy.js';
import { deleteCloudLink, findCloudLink, insertCloudLink } from './cloud.store.js';
import { linkJson, unreachable } from './link.js';
import { pullServiceData, pushServiceData } from './service-data.js';
import { sourceArchivePath } from './source.js';
import type { ReportProgress } from './transfer-progress.js';

/**
 * Transfers of a self-hosted instance's project: to the cloud and back, each one copy, verify by
 * digest, flip (docs/cloud.md). The cloud's side of them is bundle-exchange.service.ts.
 */

export interface TransferResult {
  id: string;
  location: 'local' | 'cloud';
  cloudProjectId: string;
  /** Names and counts of what moved (never values). */
  transferred: ReturnType<typeof bundleSummary> & { serviceData?: string[] };
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
export async function transferToCloud(ctx: AppContext, actor: Actor, row: ProjectRow, requestId?: string, includeData = false, report?: ReportProgress): Promise<TransferResult> {
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
  // With includeData every managed service must be able to give a dump (running, a kind with dumps), checked before anything is made there.
  const withData = includeData ? (bundle.managedServices ?? []).map((s) => s.name) : [];
  for (const name of withData) {
    const why = await whyNoData(ctx, row.orgId, row.id, name);
    if (why) throw conflict(why, 'includeData');
  }
  const transferred = { ...bundleSummary(bundle), ...(includeData ? { serviceData: withData } : {}) };

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
    // Each service's native dump, loaded into its new instance there (checked, then swapped in).
    for (const name of withData) await pushServiceData(ctx, row.orgId, row.id, cloudId, name, requestId, report);
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
        details: { cloudProjectId: cloudId, ...transferred },
      });
    });
  } catch (e) {
    return undo(e);
  }
  // The app this instance ran for the project stops: the cloud serves it now.
  const rt = ctx.ports.runtime;
  if (rt) await rt.takeOffline(ctx, row.orgId, row.id).catch((e) => ctx.log.warn({ err: e, projectId: row.id }, 'could not stop the local app of a project moved to the cloud'));
  // So do its managed services (kept, stopped, until the project comes back and they are replaced).
  await parkServices(ctx, row.orgId, row.id).catch((e) => ctx.log.warn({ err: e, projectId: row.id }, 'could not stop the local services of a project moved to the cloud'));
  return { id: row.id, location: 'cloud', cloudProjectId: cloudId, transferred, verified: true };
}

/**
 * POST /api/projects/:id/transfer/to-self-hosted. Reads the cloud copy (secrets sealed to a
 * one-time key), writes it over the local record in one transaction, verifies the local copy
 * against the cloud's by digest inside that transaction, flips the record to `location: "local"`,
 * and only then deletes the cloud copy.
 */
export async function transferToSelfHosted(ctx: AppContext, actor: Actor, row: ProjectRow, requestId?: string, includeData = false, report?: ReportProgress): Promise<TransferResult> {
  if (row.location !== 'cloud') throw conflict('the project already lives on this instance');
  requireLink(ctx);
  const link = await findCloudLink(ctx.db, row.orgId, row.id);
  const cloudId = link?.cloudProjectId ?? row.id;
  const bundle = await readCloudCopy(ctx, cloudId, requestId);
  checkBundle(bundle);
  const digest = bundleDigest(bundle);
  const held = await projectTransfers.findDomainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), row.id);
  if (held.length) throw conflict(`another project on this instance holds the domain ${held[0]}`, 'domains');
  const plan = await planServices(ctx, bundle.managedServices ?? []);
  const rows = newServiceRows(ctx, row.orgId, row.id, plan);
  const transferred = { ...bundleSummary(bundle), ...(includeData ? { serviceData: rows.map((r) => r.name) } : {}) };
  const landed = { committed: false };
  try {
    return await landLocally(ctx, actor, row, cloudId, bundle, digest, rows, includeData, transferred, landed, requestId, report);
  } catch (e) {
    // Nothing of the new services is kept when the project did not land.
    if (!landed.committed) await discardServiceRows(ctx, rows);
    throw e;
  }
}

/** to-self-hosted once the copy is read and checked: the data and archive in, one transaction, then the cloud copy goes. */
async function landLocally(
  ctx: AppContext,
  actor: Actor,
  row: ProjectRow,
  cloudId: string,
  bundle: Awaited<ReturnType<typeof readCloudCopy>>,
  digest: string,
  rows: ReturnType<typeof newServiceRows>,
  includeData: boolean,
  transferred: TransferResult['transferred'],
  landed: { committed: boolean },
  requestId?: string,
  report?: ReportProgress,
): Promise<TransferResult> {
  // Each service's data first: a dump of the cloud's instance, loaded into the new local one's data
  // folder (checked that it answers and holds it) before it is stored; it starts on it after the commit.
  if (includeData) {
    for (const r of rows) {
      if (r.desired !== 'running') throw conflict(`the service ${r.name} is stopped on the cloud: start it to move its data, or transfer without includeData`, 'includeData');
      const file = await pullServiceData(ctx, cloudId, r.name, requestId, report);
      try {
        report?.({ phase: 'load', service: r.name, bytes: 0 });
        await prepareServiceData(ctx, r, file);
      } finally {
        await rm(file, { force: true }).catch(() => {});
      }
    }
  }
  // The source archive first: it is staged and attached to the local record (not served while the
  // record is `cloud`), and the digest below covers its hash.
  if (bundle.sourceArchive) await pullSourceArchive(ctx, actor, row, cloudId, bundle.sourceArchive.sha256, requestId);

  let written: WrittenServices | undefined;
  await transaction(ctx.db, async (tx) => {
    const current = await projectQueries.findProject(tx, row.orgId, row.id);
    if (!current) throw notFound('project');
    if (current.location !== 'cloud') throw conflict('the project already lives on this instance');
    await writeBundle(tx, ctx.keyring, bundle, { orgId: row.orgId, projectId: row.id, slug: row.slug, location: 'local', now: nowIso(), replace: true, domainVerification: ctx.config.domainVerification });
    // The managed services it had here before it moved are replaced by the cloud's, each made anew.
    written = await writeServices(tx, row.orgId, row.id, rows, true);
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
      details: { cloudProjectId: cloudId, ...transferred },
    });
  }).catch((e) => {
    if (isUniqueViolation(e)) throw conflict('another project on this instance holds one of the project\'s domains', 'domains');
    throw e;
  });
  landed.committed = true;
  if (written) await startServices(ctx, written).catch((e) => ctx.log.warn({ err: e, projectId: row.id }, 'the services of a project back from the cloud could not all be started'));

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
  return { id: row.id, location: 'local', cloudProjectId: cloudId, transferred, verified: true, cloudCopyDeleted: deleted };
}

