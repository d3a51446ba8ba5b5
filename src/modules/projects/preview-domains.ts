/**
 * Where preview environments are served (contract section 16): `<branch-slug>--<project-slug>.<BERTH_APPS_DOMAIN>`.
 *
 * The branch slug is the branch (an environment without one: its name) lowercased, every run of
 * characters other than `a-z0-9` made one `-`, dashes trimmed, and cut so the whole label stays
 * within 63 characters (the DNS label limit). It never holds `--`, and neither does a project slug
 * (slugify), so a label splits at its `--` into exactly one (branch slug, project slug) pair and never
 * equals a free domain's label. Two environments of one project whose branches slug alike (`feat/a`
 * and `feat-a`, two forks' `main`, long names cut alike): the later one gets `-<6 hex>` of its name
 * (sha256) on its branch slug. What an environment got is stored (`environments.slug`, unique per
 * project), so it keeps its host until its branch changes.
 */
import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';

/** The longest DNS label. */
const LABEL_MAX = 63;
const SEPARATOR = '--';

function slugOf(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function cut(slug: string, max: number): string {
  return slug.slice(0, Math.max(1, max)).replace(/-+$/g, '');
}

/** The branch slug a preview would have with nothing taken (what `environmentUrl` computes from a branch). */
export function branchSlug(branchOrName: string, projectSlug: string): string {
  return cut(slugOf(branchOrName) || 'preview', LABEL_MAX - SEPARATOR.length - projectSlug.length);
}

/**
 * The slug a preview environment gets: its branch slug, or when another environment of the project
 * has that, the branch slug cut shorter with `-<6 hex of sha256(name)>` (then `-<6 hex of sha256(name:n)>`).
 */
export function pickPreviewSlug(branchOrName: string, envName: string, projectSlug: string, taken: ReadonlySet<string>): string {
  const base = branchSlug(branchOrName, projectSlug);
  if (!taken.has(base)) return base;
  const room = LABEL_MAX - SEPARATOR.length - projectSlug.length - 7;
  for (let n = 0; ; n++) {
    const suffix = createHash('sha256').update(n === 0 ? envName : `${envName}:${n}`).digest('hex').slice(0, 6);
    const short = cut(slugOf(branchOrName) || 'preview', room);
    const slug = short ? `${short}-${suffix}` : suffix;
    if (!taken.has(slug)) return slug;
  }
}

/** The host of a preview: `<slug>--<project-slug>.<apps domain>`. */
export function previewHost(ctx: Pick<AppContext, 'config'>, projectSlug: string, slug: string): string {
  return `${slug}${SEPARATOR}${projectSlug}.${ctx.config.appsDomain.toLowerCase()}`;
}

/** A host's label under the apps domain split into (branch slug, project slug), or null when it is no preview host. */
export function splitPreviewLabel(label: string): { slug: string; projectSlug: string } | null {
  const at = label.indexOf(SEPARATOR);
  if (at <= 0) return null;
  const slug = label.slice(0, at);
  const projectSlug = label.slice(at + SEPARATOR.length);
  if (!projectSlug || projectSlug.includes(SEPARATOR) || projectSlug.startsWith('-')) return null;
  return { slug, projectSlug };
}

/**
 * The URL the edge serves a host at. Production hosts: `http://<host>[:<edge port>]` as the project's
 * info URL. Preview hosts (under the apps domain): `https://<host>[:<https port>]` when the edge
 * terminates TLS and the free domains' wildcard certificate files are configured (they cover every
 * preview host), else the same as production.
 */
export function edgeUrlOf(ctx: Pick<AppContext, 'config' | 'ports'>, host: string, preview: boolean): string {
  const ports = ctx.ports.runtime?.edgePorts?.() ?? { http: ctx.config.edgePort, https: ctx.config.https.port };
  if (preview && ports.https !== null && ctx.config.https.wildcardCertFile) {
    return `https://${host}${ports.https && ports.https !== 443 ? `:${ports.https}` : ''}`;
  }
  return `http://${host}${ports.http && ports.http !== 80 ? `:${ports.http}` : ''}`;
}
