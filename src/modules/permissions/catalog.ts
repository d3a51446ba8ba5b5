import type { AppContext } from '../../context.js';

/**
 * The grantable-resource catalog: per grant resource type, what resources of an org there are. Each
 * area that owns a row-backed grant type (projects, backup destinations, git provider installations and
 * repositories) provides its type's entry in `ctx.ports.catalogs` (its ModuleDef's `provides`). The
 * permissions area reads it twice: `GET /api/permissions/resources?type=` lists it, and grant writes
 * check that a non-wildcard resourceId names an entry of the active org (`RESOURCE_NOT_IN_ORG` otherwise).
 *
 * A type with no provider has no rows: its catalog is empty and only `*` can be granted on it.
 */
export interface CatalogEntry {
  id: string;
  label: string;
  meta?: Record<string, unknown>;
}

export interface CatalogQuery {
  /** `gitprovider_repository` only: narrow to one account/owner. */
  owner?: string;
}

export interface CatalogProvider {
  /** Every resource of the type in `orgId` (never `*`). */
  list(ctx: AppContext, orgId: string, query: CatalogQuery): Promise<CatalogEntry[]>;
  /** Does `id` name a resource of the type in `orgId`? Defaults to a lookup in `list`. */
  has?(ctx: AppContext, orgId: string, id: string): Promise<boolean>;
}

declare module '../../ports.js' {
  interface Ports {
    /** The permission catalog's entries per grant resource type (each owning area provides its type's; merged). */
    catalogs: Partial<Record<string, CatalogProvider>>;
  }
}

/** Types whose only catalog entry is the org-wide `*` (seed: billing and audit). */
export const WILDCARD_ONLY_TYPES: readonly string[] = ['billing', 'audit'];

export function catalogProvider(ctx: Pick<AppContext, 'ports'>, type: string): CatalogProvider | undefined {
  return ctx.ports.catalogs[type];
}

export async function catalogHas(ctx: AppContext, type: string, orgId: string, id: string): Promise<boolean> {
  const p = catalogProvider(ctx, type);
  if (!p) return false;
  if (p.has) return p.has(ctx, orgId, id);
  return (await p.list(ctx, orgId, {})).some((e) => e.id === id);
}
