import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import type { ModuleDef } from '../../http/route.js';
import { cloudRecordKinds, routeTable, type RouteTable } from './cloud-records.js';
import { mergeCloudHome, type HomeEntry } from './home.js';
import { cloudGithubUnreachable, linkStatus, type CloudLink, type LinkStatus } from './link.js';

declare module '../../ports.js' {
  interface Ports {
    /** The cloud link of a self-hosted instance (cloud area): its status, the home feed's cloud half. */
    cloud: CloudHost | null;
  }
}

/**
 * The link state of one running server (made by the cloud module's `provides`, reached as
 * `ctx.ports.cloud`, declared above): the link (its connection pool made on first use) and the last
 * known status.
 */
export class CloudHost {
  private current: CloudLink | null = null;
  private statusCache: { at: number; status: Promise<LinkStatus> } | null = null;

  private table: { modules: readonly ModuleDef[]; table: RouteTable; recordKinds: Set<string> } | null = null;

  constructor(private readonly ctx: AppContext) {}

  /** The instance's link, or null when this is a cloud instance or no link is configured. */
  link(): CloudLink | null {
    const { config } = this.ctx;
    if (config.mode !== 'self-hosted' || !config.cloudUrl || !config.cloudToken) return null;
    this.current ??= { url: config.cloudUrl, token: config.cloudToken, agent: null };
    return this.current;
  }

  /** The cached status when younger than `maxAgeMs`. */
  cachedStatus(maxAgeMs: number): Promise<LinkStatus> | null {
    const c = this.statusCache;
    return c && Date.now() - c.at < maxAgeMs ? c.status : null;
  }

  noteStatus(status: Promise<LinkStatus>): void {
    this.statusCache = { at: Date.now(), status };
  }

  /** Every route and resolver of the running server (its modules), walked once: cloud-records.ts derives from it. */
  tableOf(modules: readonly ModuleDef[]): { table: RouteTable; recordKinds: Set<string> } {
    if (this.table?.modules !== modules) {
      const table = routeTable(modules);
      this.table = { modules, table, recordKinds: cloudRecordKinds(table.routes) };
    }
    return this.table;
  }

  // ---------------------------------------------------------------- for other areas

  /** Whether this instance is linked and the cloud answers (cached 3 s): health, project info. */
  status(): Promise<LinkStatus> {
    return linkStatus(this.ctx);
  }

  /** The cloud half of `GET /api/projects/home` (home.ts). */
  mergeHome<T extends HomeEntry>(actor: Actor, local: T[]): Promise<{ projects: T[]; cloudUnreachable: boolean }> {
    return mergeCloudHome(this.ctx, actor, local);
  }

  /** True when this instance relies on the cloud's GitHub App and the cloud does not answer (git provider). */
  githubUnreachable(): Promise<boolean> {
    return cloudGithubUnreachable(this.ctx);
  }

  async close(): Promise<void> {
    const link = this.current;
    this.current = null;
    this.statusCache = null;
    if (link?.agent) await link.agent.close().catch(() => {});
  }
}

