import type { AppContext } from '../../context.js';
import { appKeyOf } from '../../runtime/app-key.js';
import type { Supervisor } from '../../runtime/supervisor.js';
import { hostReads, projectQueries } from '../projects/index.js';

/** Whose an app of this server is: its org, project and environment (`production` or a preview's name); null when the project is gone. */
export async function appWhere(ctx: AppContext, supervisor: Pick<Supervisor, 'projectOf'>, app: string): Promise<{ orgId: string; projectId: string; environment: string } | null> {
  const owner = await hostReads.projectOrgAnyOrg(ctx.db, supervisor.projectOf(app)).catch(() => undefined);
  if (!owner) return null;
  let environment = 'production';
  if (app !== owner.id) {
    const envs = await projectQueries.listEnvironments(ctx.db, owner.orgId, owner.id);
    environment = envs.find((e) => appKeyOf(owner.id, e.name) === app)?.name ?? app;
  }
  return { orgId: owner.orgId, projectId: owner.id, environment };
}
