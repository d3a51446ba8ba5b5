import type { AppContext } from '../../context.js';
import { projectEnv } from '../projects/index.js';
import { managedServiceEnv } from '../services/index.js';

/**
 * The variables a project's build or app runs with in `environment`: its managed services'
 * (`DATABASE_URL`, `REDIS_URL`, `<NAME>_URL`, `PG*`; contract section 19: a preview's own instances in a preview) under the environment's own
 * (a variable the user set wins, e.g. a `DATABASE_URL` of an outside database), and every secret value
 * of both to redact from build output and logs (the services' passwords and URLs among them).
 */
export async function envForRun(ctx: AppContext, orgId: string, projectId: string, environment: string): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const [own, services] = await Promise.all([projectEnv.resolveEnvForRuntime(ctx, projectId, environment), managedServiceEnv(ctx, orgId, projectId, environment)]);
  return { env: { ...services.env, ...own.env }, secrets: [...new Set([...own.secrets, ...services.secrets])] };
}
