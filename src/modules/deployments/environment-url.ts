import type { AppContext } from '../../context.js';
import { projectHosts } from '../projects/index.js';

/**
 * The URL a preview environment is served at: `http(s)://<branch-slug>--<project-slug>.<apps
 * domain>[:port]` (https when the edge terminates TLS with the free domains' wildcard files; the port
 * when it is not the scheme's default). The environment's stored host wins when given (`domain` of
 * its record, or its row's `slug`): a preview whose branch slugs like another's got a hash suffix
 * there (projects/preview-domains.ts). Production: its free domain's URL (the project's info names its
 * primary domain).
 */
export function environmentUrl(
  ctx: AppContext,
  project: { slug: string },
  env: { name: string; type: string; branch: string | null; domain?: string | null; slug?: string | null },
): string {
  if (env.type !== 'preview') return projectHosts.edgeUrlOf(ctx, `${project.slug}.${ctx.config.appsDomain.toLowerCase()}`, false);
  const host = env.domain ?? projectHosts.previewHost(ctx, project.slug, env.slug ?? projectHosts.branchSlug(env.branch ?? env.name, project.slug));
  return projectHosts.edgeUrlOf(ctx, host, true);
}
