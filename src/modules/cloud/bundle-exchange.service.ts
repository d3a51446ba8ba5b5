import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, notFound } from '../../lib/errors.js';
import { newId, nowIso, randomString } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectTransfers, slugify, type ProjectRow } from '../projects/index.js';
import { newServiceRows, planServices, startServices, writeServices, type WrittenServices } from '../services/index.js';
import { bundleSummary, checkBundle, readBundleRows, writeBundle, bundleFromRows, type Bundle } from './bundle.js';
import { sealBundle, type SealedBundle } from './seal.js';

/**
 * The cloud's side of transfers: a project made from a bundle (import-bundle), and a project's bundle
 * with its secrets sealed to the caller's one-time key (export). Their routes are `cloudOnly` (the gate's 404 elsewhere).
 */

const ID_RE = /^prj_[a-z0-9]{20}$/;

/**
 * POST /api/projects/import-bundle (cloud only): creates a project from a bundle in one transaction.
 * Keeps the bundle's project id when it is well-formed and free on this instance (so that ids
 * stay the same on both sides), and its slug when free. A domain held by another project is 409.
 */
export async function importBundle(ctx: AppContext, actor: Actor, bundle: Bundle): Promise<{ id: string; slug: string }> {
  checkBundle(bundle);
  const held = await projectTransfers.findDomainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), null);
  if (held.length) throw conflict(`another project holds the domain ${held[0]}`, 'domains');
  // Every managed service must be one this server's runtime runs (400 naming it otherwise).
  const plan = await planServices(ctx, bundle.managedServices ?? []);
  for (let attempt = 0; ; attempt++) {
    const id = attempt === 0 && ID_RE.test(bundle.project.id) && !(await projectTransfers.isProjectIdTaken(ctx.db, bundle.project.id)) ? bundle.project.id : newId('prj');
    const base = slugify(bundle.project.slug);
    const slug = attempt === 0 && !(await projectTransfers.isSlugTaken(ctx.db, base)) ? base : `${base.slice(0, 33)}-${randomString(6)}`;
    try {
      let written: WrittenServices | undefined;
      await transaction(ctx.db, async (tx) => {
        await writeBundle(tx, ctx.keyring, bundle, { orgId: actor.orgId, projectId: id, slug, location: 'local', now: nowIso(), replace: false, domainVerification: ctx.config.domainVerification });
        written = await writeServices(tx, actor.orgId, id, newServiceRows(ctx, actor.orgId, id, plan), false);
        await insertAuditEvent(tx, {
          orgId: actor.orgId,
          actorId: actor.userId,
          action: 'project.import',
          resourceType: 'project',
          resourceId: id,
          details: { name: bundle.project.name, slug, ...bundleSummary(bundle) },
        });
      });
      // Its managed services start empty, with credentials of this instance (their data, when it
      // moves, is loaded afterwards: POST /api/projects/:id/services/:name/transfer-data).
      if (written) await startServices(ctx, written);
      return { id, slug };
    } catch (e) {
      if (isUniqueViolation(e) && attempt < 3) {
        const again = await projectTransfers.findDomainsHeldElsewhere(ctx.db, bundle.domains.map((d) => d.domain), null);
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
  const rows = await readBundleRows(ctx.db, row.orgId, row.id);
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
