import type { AppContext } from '../../context.js';
import type { EdgeTarget } from '../../edge/proxy.js';
import type { StaticSite } from '../../edge/backend.js';
import { compileRules, type CompiledRule, type RuleRow } from '../../edge/rules.js';
import type { Supervisor } from '../../runtime/supervisor.js';
import { projectHosts, hostReads, type EdgeProject } from '../projects/index.js';
import * as store from '../deployments/index.js';
import { appKeyOf } from '../../runtime/app-key.js';

/** After this, a host's cached project, release and route rules are refreshed in the background. */
const ROUTE_TTL_MS = 400;
/** Older than this, a cached answer is not served while it is refreshed (rule changes: within 1 s). */
const ROUTE_STALE_MS = 800;

/** The tables a host's route is read from (as the database names them). */
const ROUTE_TABLES = new Set(['projects', 'domains', 'environments', 'route_rules', 'deployments']);

type RouteValue = {
  project: EdgeProject;
  /** The app the host names (`appKeyOf`): the project's id for its own domains, a preview environment's key for a preview host. */
  app: string;
  hasRelease: boolean;
  rules: CompiledRule[];
  ruleRows: RuleRow[];
  static: StaticSite | null;
  httpsRedirect: boolean;
  hsts: boolean;
};

interface RouteEntry {
  at: number;
  value: Promise<RouteValue | null>;
  /** Set once loaded (null: no project at this host). */
  resolved?: RouteValue | null;
  refreshing: boolean;
  /** The target answered while the project can serve (reused, no allocation per request). */
  ok?: EdgeTarget;
}

/**
 * The edge proxy's view of hosts: which project (and environment) a host names, whether it can serve,
 * and its route rules, cached briefly per host.
 *
 * A host is, in this order: a verified custom domain (production), a free domain `<slug>.<apps
 * domain>` (production), or a preview environment's `<branch-slug>--<project-slug>.<apps domain>`
 * (contract section 16). A preview host serves that environment's current release: its static files,
 * or its own app, whose key (`appKeyOf`, never the project's id) is the target's `projectId` as the
 * edge proxy sees it, so its upstream, open connections and request log are the preview's own. The
 * project's status and route rules apply to its previews as to production.
 */
export class EdgeRoutes {
  private readonly routes = new Map<string, RouteEntry>();

  constructor(
    private readonly ctx: AppContext,
    private readonly supervisor: Supervisor,
  ) {
    // Another instance's write to what a route is made of drops everything here when it commits (the
    // bus's `tables`, migration 024); the TTL below stays, for this instance's own writes by raw SQL.
    ctx.bus.subscribe('tables', (p: { t?: unknown } | null) => {
      if (typeof p?.t === 'string' && ROUTE_TABLES.has(p.t)) this.invalidate();
    });
    ctx.bus.onResync(() => this.invalidate());
  }

  /**
   * Drops the edge's cached routes (enable, disable, deploy, delete, routing retry). The cache is small
   * and short-lived, so everything goes: the next request of any host reloads.
   */
  invalidate(_projectId?: string): void {
    this.routes.clear();
    this.onInvalidate?.();
  }

  /** Told of every drop (the threaded edge drops its own copies: src/edge/thread/). */
  onInvalidate: (() => void) | null = null;

  private async load(host: string): Promise<RouteValue | null> {
    let project = await hostReads.projectByDomain(this.ctx.db, host);
    let environment = 'production';
    const suffix = '.' + this.ctx.config.appsDomain.toLowerCase();
    if (!project && host.endsWith(suffix)) {
      const label = host.slice(0, -suffix.length);
      if (label && !label.includes('.')) {
        project = await hostReads.projectBySlug(this.ctx.db, label);
        const preview = project ? null : projectHosts.splitPreviewLabel(label);
        if (preview) {
          const p = await hostReads.projectBySlug(this.ctx.db, preview.projectSlug);
          const env = p ? await hostReads.environmentBySlugAnyOrg(this.ctx.db, p.id, preview.slug) : undefined;
          if (p && env?.type === 'preview') {
            project = p;
            environment = env.name;
          }
        }
      }
    }
    if (!project || project.location !== 'local') return null;
    const rel = await store.currentRelease(this.ctx.db, project.orgId, project.id, environment);
    const ruleRows = await hostReads.listRouteRules(this.ctx.db, project.orgId, project.id);
    const rules = compileRules(ruleRows);
    return {
      project,
      app: appKeyOf(project.id, environment),
      hasRelease: !!rel,
      rules,
      ruleRows,
      static: staticSiteOf(project, rel),
      httpsRedirect: await this.redirects(host, project),
      hsts: project.hsts === 1,
    };
  }

  /**
   * Does plain HTTP to this host answer 308 to https:// (contract section 14)? Only with a TLS
   * listener; `config.httpsRedirect` true or false says, null (the default) is true once the host has
   * a certificate. A certificates port that fails means no redirect: plain HTTP keeps working.
   */
  private async redirects(host: string, project: EdgeProject): Promise<boolean> {
    if (this.ctx.config.https.port === null) return false;
    if (project.httpsRedirect !== null) return project.httpsRedirect === 1;
    const certs = this.ctx.ports.certificates;
    if (!certs) return false;
    try {
      return (await certs.forServerName(host)) !== null;
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message, host }, 'edge: could not ask for the certificate of a host');
      return false;
    }
  }

  /**
   * The edge's view of a host. Fresh cache hits answer synchronously; an entry older than the TTL is
   * refreshed in the background while the previous answer is still served (so a change is seen within
   * the TTL plus one query), and a host not cached yet waits for its first load.
   */
  lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null> {
    const now = Date.now();
    let e = this.routes.get(host);
    if (!e) {
      const entry: RouteEntry = { at: now, value: this.load(host), refreshing: false };
      this.routes.set(host, entry);
      if (this.routes.size > 10000) this.routes.clear();
      entry.value.then(
        (v) => {
          entry.resolved = v;
        },
        () => this.routes.delete(host),
      );
      e = entry;
    } else if (now - e.at > ROUTE_TTL_MS && e.resolved !== undefined) {
      const entry = e;
      if (!entry.refreshing) {
        entry.refreshing = true;
        entry.value = this.load(host);
        entry.value.then(
          (v) => {
            entry.resolved = v;
            entry.ok = undefined;
            entry.at = Date.now();
            entry.refreshing = false;
          },
          () => {
            entry.refreshing = false;
            this.routes.delete(host);
          },
        );
      }
      // Within the bound a change must be enforced in, the previous answer is still good enough;
      // an older one waits for the fresh load.
      if (now - entry.at > ROUTE_STALE_MS) return entry.value.then((v) => this.targetOf(entry, v ?? null));
    }
    const entry = e;
    if (entry.resolved === undefined) return entry.value.then((v) => this.targetOf(entry, v ?? null));
    return this.targetOf(entry, entry.resolved);
  }

  private targetOf(entry: RouteEntry, v: RouteValue | null): EdgeTarget | null {
    if (!v) return null;
    let unavailable: string | null = null;
    if (v.project.status !== 'enabled') unavailable = 'This project is disabled.';
    else if (!v.hasRelease) unavailable = 'This project has not been deployed yet.';
    else if (!v.static && this.supervisor.stateOf(v.app) === 'failed') unavailable = 'The app failed to start; check its logs.';
    if (unavailable) return { projectId: v.app, unavailable, rules: v.rules, ruleRows: v.ruleRows, httpsRedirect: v.httpsRedirect, hsts: v.hsts };
    if (!entry.ok || entry.ok.rules !== v.rules) {
      entry.ok = { projectId: v.app, unavailable: null, rules: v.rules, ruleRows: v.ruleRows, static: v.static, httpsRedirect: v.httpsRedirect, hsts: v.hsts };
    }
    return entry.ok;
  }
}

/**
 * The static site a host serves, when its current release is one: the release's folder, `spa` from
 * the project's config.static (else the plan's default recorded with the release), `cleanUrls` from
 * the config (off by default).
 */
function staticSiteOf(project: EdgeProject, rel: { releaseDir: string | null; staticSite: string | null } | undefined): StaticSite | null {
  if (!rel?.staticSite || !rel.releaseDir) return null;
  let planned = false;
  try {
    planned = (JSON.parse(rel.staticSite) as { spa?: boolean }).spa === true;
  } catch {
    /* the default */
  }
  return { root: rel.releaseDir, spa: project.staticSpa === null ? planned : project.staticSpa === 1, cleanUrls: project.staticCleanUrls === 1 };
}
