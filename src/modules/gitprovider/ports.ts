/**
 * The port the git provider area declares on src/ports.ts's `Ports` (it also provides the projects
 * area's `git`, the grant `catalogs` and a `deploymentSettled` listener, declared by those areas).
 */
import type { AppContext } from '../../context.js';

/** Short-lived clone credentials for a repository, or null when no connected account reaches it. */
export type CloneTokenPort = (ctx: AppContext, orgId: string, owner: string, repo: string) => Promise<{ token: string; username?: string } | null>;

declare module '../../ports.js' {
  interface Ports {
    /** Short-lived clone credentials for a repository (gitprovider area; the build's clone). */
    cloneTokens: CloneTokenPort | null;
  }
}
