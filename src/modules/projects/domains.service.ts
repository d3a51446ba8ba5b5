import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { freeDomainOf, type ProjectRecord } from './projects.presenters.js';
import { loadRecord } from './projects.service.js';
import * as store from './projects.store.js';
import type { ProjectRow } from './projects.store.js';
import { normalizeHostname } from './validate.js';

/**
 * Validates a custom domain: IDNA to ASCII, no port, no wildcard, not under the apps domain (those
 * names are the free domains of projects).
 */
export function checkCustomDomain(ctx: AppContext, input: string, field = 'domain'): string {
  const domain = normalizeHostname(input, field);
  const apps = ctx.config.appsDomain.toLowerCase();
  if (domain === apps || domain.endsWith(`.${apps}`)) {
    throw invalid(field, `${field} must not be under ${apps}: those names are the free domains of projects`);
  }
  return domain;
}

/** POST connect: adds the domain (unique across the instance) and makes it the primary one, in one transaction. */
export async function connectDomain(ctx: AppContext, actor: Actor, row: ProjectRow, input: string): Promise<ProjectRecord> {
  const domain = checkCustomDomain(ctx, input);
  if (domain === freeDomainOf(ctx, row.slug)) throw invalid('domain', 'that is already the free domain of this project');
  try {
    await transaction(ctx.db, async (tx) => {
      const holder = await store.findDomainAnywhere(tx, domain);
      if (holder && holder.projectId !== row.id) throw conflict(`${domain} is already connected to another project`, 'domain');
      if (!holder) {
        await store.insertDomain(tx, { id: newId('dom'), orgId: row.orgId, projectId: row.id, domain, isPrimary: 1, createdAt: nowIso() });
      }
      await store.setPrimaryDomain(tx, row.orgId, row.id, domain);
      await store.updateProject(tx, row.orgId, row.id, { updatedAt: nowIso() });
      await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.domain.connect', resourceType: 'project', resourceId: row.id, details: { domain } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`${domain} is already connected to another project`, 'domain');
    throw e;
  }
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}
