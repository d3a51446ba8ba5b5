import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import { isGrantResourceType } from '../../authz/grants.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { catalogProvider, WILDCARD_ONLY_TYPES, type CatalogEntry, type CatalogQuery } from './catalog.js';

const TAG_OF: Record<string, string> = {
  project: 'project',
  server: 'server',
  mail_server: 'mail_server',
  backup_destination: 'backup_destination',
  gitprovider_installation: 'gitprovider',
  gitprovider_repository: 'gitprovider',
};

/**
 * GET resources?type=: the grantable resources of one type in the active org. `*` is never listed,
 * except that it is the only entry of `billing` and `audit`. The two git provider types are for
 * admins and owners only. A restricted member sees only the entries it can read.
 */
export async function listCatalog(ctx: AppContext, actor: Actor, type: string, query: CatalogQuery): Promise<CatalogEntry[]> {
  if (!isGrantResourceType(type)) {
    throw new AppError('INVALID_RESOURCE_TYPE', 'type must be one of project, server, mail_server, backup_destination, billing, audit, gitprovider_installation, gitprovider_repository', { field: 'type' });
  }
  if (type.startsWith('gitprovider_') && actor.role !== 'owner' && actor.role !== 'admin') {
    throw new AppError('FORBIDDEN', 'only an owner or admin can list git provider resources');
  }
  if (WILDCARD_ONLY_TYPES.includes(type)) return [{ id: '*', label: type === 'billing' ? 'Billing (entire organization)' : 'Audit log (entire organization)' }];
  const provider = catalogProvider(ctx, type);
  if (!provider) return [];
  let entries = (await provider.list(ctx, actor.orgId, type === 'gitprovider_repository' ? query : {})).filter((e) => e.id !== '*');
  if (type === 'gitprovider_repository' && query.owner) {
    const owner = query.owner.toLowerCase();
    entries = entries.filter((e) => {
      const metaOwner = typeof e.meta?.owner === 'string' ? e.meta.owner : e.id.split('/')[0];
      return (metaOwner ?? '').toLowerCase() === owner;
    });
  }
  if (actor.role === 'restricted') {
    entries = entries.filter((e) => can(actor, `${TAG_OF[type]}:read`, { orgId: actor.orgId, grantKeys: [{ type, id: e.id }] }));
  }
  return entries.map((e) => ({ id: e.id, label: e.label, ...(e.meta ? { meta: e.meta } : {}) }));
}
