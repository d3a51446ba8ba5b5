import type { Db } from '../../db/client.js';
import type { WriteEvents } from '../../db/write-events.js';
import type { Bus } from '../../db/notify.js';
import { findProject, type ProjectRow } from './projects.store.js';
import { listRoutes, type DomainRow } from './domains.store.js';

/** A project's domains and preview slugs (what its `routes` show). */
export interface ProjectRoutes {
  domains: DomainRow[];
  previews: readonly string[];
}

/** The domains and preview slugs of an org's projects, by project id (what the project list shows). */
export interface OrgRoutes {
  domains: ReadonlyMap<string, DomainRow[]>;
  previews: ReadonlyMap<string, readonly string[]>;
}

/**
 * How long a read may be served from memory: a safety net only. Another instance's writes drop the
 * entries at once (the bus's `tables` messages, sent by the database when the write commits).
 */
export const PROJECT_READ_TTL_MS = 60_000;
/** The tables whose writes make these reads stale (as the code and as the database name them). */
const TABLES = ['projects', 'domains', 'environments'];

interface Entry<T> {
  gen: number;
  at: number;
  value: T;
}

/**
 * Reads of one project for `GET` requests (the row the route gate resolves, and its domains), served
 * from memory for up to PROJECT_READ_TTL_MS. One per server (the projects module's `provides`).
 *
 * Every write to `projects`, `domains` or `environments` through the query builder on this server drops everything
 * at once (`ctx.writes`, told when the write is compiled, before it runs), and an answer read while a
 * write happened is not kept (the generation it was read under has passed). A write made by another
 * instance sharing a PostgreSQL database drops everything when it commits (`ctx.bus` `tables`, from
 * the triggers of migration 024), as does a bus that may have missed messages; while the bus's
 * listener is down nothing is kept. Only
 * reads use it: a route that writes resolves its record from the database, so an update never
 * merges into a stale row. The rows handed out are frozen: presenters copy, nothing mutates them.
 */
export class ProjectReads {
  private gen = 0;
  private readonly rows = new Map<string, Entry<ProjectRow | undefined>>();
  private readonly orgs = new Map<string, Entry<OrgRoutes>>();
  private readonly routes = new Map<string, Entry<ProjectRoutes>>();
  /** Answers written from a row and its routes (`json`), by row object: gone with the row. */
  private readonly texts = new WeakMap<ProjectRow, { routes: ProjectRoutes; text: string }>();

  constructor(
    writes: WriteEvents,
    private readonly bus?: Pick<Bus, 'live' | 'subscribe' | 'onResync'>,
  ) {
    writes.on(TABLES, () => this.dropAll());
    bus?.subscribe('tables', (p: { t?: unknown } | null) => {
      if (typeof p?.t === 'string' && TABLES.includes(p.t)) this.dropAll();
    });
    bus?.onResync(() => this.dropAll());
  }

  private dropAll(): void {
    this.gen++;
    this.rows.clear();
    this.orgs.clear();
    this.routes.clear();
  }

  /** The project's row: from memory without a promise when it is there. */
  project(db: Db, orgId: string, id: string): ProjectRow | undefined | Promise<ProjectRow | undefined> {
    return this.read(this.rows, `${orgId}|${id}`, () => findProject(db, orgId, id));
  }

  /** The project's domains and preview slugs (its `routes`), read in one query. */
  routesOf(db: Db, orgId: string, projectId: string): ProjectRoutes | Promise<ProjectRoutes> {
    return this.read(this.routes, `${orgId}|${projectId}`, () => loadProjectRoutes(db, orgId, projectId));
  }

  /**
   * The domains and preview slugs of every project of the org: the project list reads its projects
   * (one query) and takes the rest from here, so a warm list costs one round trip.
   */
  orgRoutesOf(db: Db, orgId: string): OrgRoutes | Promise<OrgRoutes> {
    return this.read(this.orgs, orgId, () => loadOrgRoutes(db, orgId));
  }

  /**
   * The JSON `write` makes of `row` with `routes` (the route's serializer over the presented
   * project), kept while both are the objects these reads hand out: a drop hands out new ones.
   */
  json(row: ProjectRow, routes: ProjectRoutes, write: () => string): string {
    const kept = this.texts.get(row);
    if (kept?.routes === routes) return kept.text;
    const text = write();
    this.texts.set(row, { routes, text });
    return text;
  }

  private read<T>(map: Map<string, Entry<T>>, key: string, load: () => Promise<T>): T | Promise<T> {
    const now = Date.now();
    const hit = map.get(key);
    if (hit && hit.gen === this.gen && now - hit.at <= PROJECT_READ_TTL_MS) return hit.value;
    const gen = this.gen;
    return load().then((loaded) => {
      const value = freeze(loaded);
      if (gen === this.gen && (this.bus?.live ?? true)) {
        if (map.size >= 10000) map.clear();
        map.set(key, { gen, at: now, value });
      }
      return value;
    });
  }
}

/** The domains and preview slugs of the org's projects (or of one), grouped by project: one query. */
export async function loadOrgRoutes(db: Db, orgId: string, projectId?: string): Promise<OrgRoutes> {
  const read = await listRoutes(db, orgId, projectId);
  const domains = new Map<string, DomainRow[]>();
  for (const d of read.domains) {
    Object.freeze(d);
    const list = domains.get(d.projectId);
    if (list) list.push(d);
    else domains.set(d.projectId, [d]);
  }
  const previews = new Map<string, string[]>();
  for (const e of read.previews) {
    const list = previews.get(e.projectId);
    if (list) list.push(e.slug);
    else previews.set(e.projectId, [e.slug]);
  }
  return { domains, previews };
}

/** One project's domains and preview slugs: one query. */
export async function loadProjectRoutes(db: Db, orgId: string, projectId: string): Promise<ProjectRoutes> {
  const all = await loadOrgRoutes(db, orgId, projectId);
  return { domains: all.domains.get(projectId) ?? [], previews: all.previews.get(projectId) ?? [] };
}

function freeze<T>(v: T): T {
  if (Array.isArray(v)) {
    for (const x of v) Object.freeze(x);
    return Object.freeze(v) as T;
  }
  return v && typeof v === 'object' ? Object.freeze(v) : v;
}
