import type { Db } from '../../db/client.js';
import type { WriteEvents } from '../../db/write-events.js';
import type { Bus } from '../../db/notify.js';
import { findProject, listDomains, previewSlugs, type DomainRow, type ProjectRow } from './projects.store.js';

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
  private readonly domains = new Map<string, Entry<DomainRow[]>>();
  private readonly previews = new Map<string, Entry<string[]>>();

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
    this.domains.clear();
    this.previews.clear();
  }

  project(db: Db, orgId: string, id: string): Promise<ProjectRow | undefined> {
    return this.read(this.rows, `${orgId}|${id}`, () => findProject(db, orgId, id));
  }

  domainsOf(db: Db, orgId: string, projectId: string): Promise<DomainRow[]> {
    return this.read(this.domains, `${orgId}|${projectId}`, () => listDomains(db, orgId, projectId));
  }

  /** The slugs of the project's preview environments (its `routes.previewDomains`). */
  previewSlugsOf(db: Db, orgId: string, projectId: string): Promise<string[]> {
    return this.read(this.previews, `${orgId}|${projectId}`, () => previewSlugs(db, orgId, projectId));
  }

  private async read<T>(map: Map<string, Entry<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = map.get(key);
    if (hit && hit.gen === this.gen && now - hit.at <= PROJECT_READ_TTL_MS) return hit.value;
    const gen = this.gen;
    const value = freeze(await load());
    if (gen === this.gen && (this.bus?.live ?? true)) {
      if (map.size >= 10000) map.clear();
      map.set(key, { gen, at: now, value });
    }
    return value;
  }
}

function freeze<T>(v: T): T {
  if (Array.isArray(v)) {
    for (const x of v) Object.freeze(x);
    return Object.freeze(v) as T;
  }
  return v && typeof v === 'object' ? Object.freeze(v) : v;
}
