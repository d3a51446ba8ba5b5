import { answer, type Answered, type ApiClient } from './client.js';
import { note, UsageError } from './output.js';

/**
 * A project's environments as `berth deploy --env NAME` uses them (contract section 16): a preview
 * environment that does not exist yet is created through `POST /api/projects/:id/environments`, and
 * a ready deployment's URL is its environment's `url` (a preview's own host, edge port included).
 */
export type Environment = Answered<'/api/projects/{id}/environments', 'post'>;

/** The server's rule for environment names (environments.service.ts), checked before anything is uploaded. */
const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** A usage error (exit 2) when `--env` cannot name an environment. */
export function checkEnvironmentName(name: string): void {
  if (!NAME_RE.test(name)) throw new UsageError(`--env must be lowercase letters, digits and dashes (at most 63 characters), not "${name}"`);
}

export function listEnvironments(client: ApiClient, projectId: string): Promise<Environment[]> {
  return answer(client.api.GET('/api/projects/{id}/environments', { params: { path: { id: projectId } } }));
}

/**
 * The environment `name` of the project: found, or (a name other than production) created as a
 * preview environment, which copies production's variables. Says on stderr when it made one.
 */
export async function ensureEnvironment(client: ApiClient, projectId: string, name: string): Promise<Environment> {
  const found = (await listEnvironments(client, projectId)).find((e) => e.name === name);
  if (found) return found;
  const made = await answer(client.api.POST('/api/projects/{id}/environments', { params: { path: { id: projectId } }, body: { name } }));
  note(`created the preview environment ${made.name} (served at ${made.url}; production's variables copied)`);
  return made;
}

/**
 * Where a ready deployment of `environment` is served: production's URL from the project info
 * (`runtime.url`), a preview's from its environment record. Null when the server names none.
 */
export async function environmentUrl(client: ApiClient, projectId: string, environment: string): Promise<string | null> {
  if (environment === 'production') {
    const info = await answer(client.api.GET('/api/projects/{id}/info', { params: { path: { id: projectId } } }));
    return info.runtime?.url ?? null;
  }
  const env = (await listEnvironments(client, projectId)).find((e) => e.name === environment);
  return env?.url ?? null;
}
