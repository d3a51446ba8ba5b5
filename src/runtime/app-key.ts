import { createHash } from 'node:crypto';

/**
 * The key an environment's app runs under in the supervisor, the runtime drivers (box, cgroup,
 * container, network and service names), the runtime log and the edge: production's is the project's
 * id (as before previews existed), a preview's `<projectId>-<10 hex of sha256(environment name)>`
 * (short enough for a Swarm service name, and only `[A-Za-z0-9_-]`).
 */
export function appKeyOf(projectId: string, environment: string): string {
  if (environment === 'production') return projectId;
  return `${projectId}-${createHash('sha256').update(environment).digest('hex').slice(0, 10)}`;
}

/** The project of an app key (`appKeyOf`): the part before its `-` (project ids hold none). */
export function projectOfAppKey(app: string): string {
  const at = app.indexOf('-');
  return at > 0 ? app.slice(0, at) : app;
}

/** Is this app key a preview environment's (not a project's production app)? */
export function isPreviewApp(app: string): boolean {
  return projectOfAppKey(app) !== app;
}
