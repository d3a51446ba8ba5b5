import type { Command } from 'commander';
import { answer, savedClient, type Answered, type ApiClient } from '../client.js';
import { resolveProject, type ProjectSummary } from '../link.js';
import { action, note, printJson, printTable } from '../output.js';
import { age, clip, positiveInt } from './shared.js';

/** A deployment record (contract section 6), `current` on the one serving (section 12). */
export type Deployment = Answered<'/api/deployments/{id}', 'get'>;

/** One log line of a build (contract sections 5 and 6). */
export type LogLine = Answered<'/api/deployments/{id}/logs', 'get'>[number];

/** What a deployment was built from, shortly: the commit, else the ref, else its trigger. */
function source(d: Deployment): string {
  if (d.commit) return d.commit.slice(0, 12);
  if (d.ref) return d.ref;
  return d.trigger;
}

function listDeployments(client: ApiClient, projectId: string, q: { limit?: number; environment?: string } = {}) {
  const query = { ...(q.limit ? { limit: q.limit } : {}), ...(q.environment ? { environment: q.environment } : {}) };
  return answer(client.api.GET('/api/projects/{id}/deployments', { params: { path: { id: projectId }, query } }));
}

/**
 * `berth deployments [PROJECT]`, `berth rollback PROJECT [DEPLOYMENT]`, `berth promote PROJECT ENVIRONMENT
 * [DEPLOYMENT]`, `berth cancel DEPLOYMENT`.
 */
export function registerDeploymentCommands(program: Command): void {
  program
    .command('deployments [project]')
    .description("list a project's deployments, newest first, marking the one serving (default: this folder's project)")
    .option('-n, --limit <n>', 'how many (1..200)', '20')
    .option('-e, --environment <name>', 'only this environment')
    .option('--json', 'print JSON')
    .action(
      action(async (ref: string | undefined, opts: { limit: string; environment?: string; json?: boolean }) => {
        const limit = positiveInt('--limit', opts.limit, 200);
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const list = await listDeployments(client, p.id, { limit, environment: opts.environment });
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log(`no deployments of ${p.slug} yet`);
        printTable([
          ['', 'ID', 'STATUS', 'TRIGGER', 'ENVIRONMENT', 'SOURCE', 'AGE', 'ERROR'],
          ...list.map((d) => [d.current ? '*' : '', d.id, d.status, d.trigger, d.environment, source(d), age(d.createdAt), clip(d.error, 60)]),
        ]);
        if (list.some((d) => d.current)) note('* serving now');
      }),
    );

  program
    .command('rollback <project> [deployment]')
    .description('serve an earlier ready deployment again, without a build (default: the one before the current)')
    .option('--json', 'print JSON: the deployment now serving')
    .action(
      action(async (ref: string, deploymentId: string | undefined, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        // The answer comes once the swap is done: the deployment it names serves (`current: true`).
        const d = await answer(client.api.POST('/api/projects/{id}/rollback', { params: { path: { id: p.id } }, body: deploymentId ? { deploymentId } : {} }));
        if (opts.json) return printJson(d);
        console.log(`rolled back ${p.slug} (${d.environment}): now serving ${d.id} (${source(d)}, built ${age(d.finishedAt ?? d.createdAt)} ago)`);
        const info = await answer(client.api.GET('/api/projects/{id}/info', { params: { path: { id: p.id } } })).catch(() => null);
        if (info?.runtime?.url) console.log(info.runtime.url);
      }),
    );

  program
    .command('promote <project> <environment> [deployment]')
    .description("put a preview environment's ready build into production, without a rebuild (default: the preview's current release)")
    .option('--json', 'print JSON: the new production deployment')
    .action(
      action(async (ref: string, environment: string, deploymentId: string | undefined, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        // The answer comes once the swap is done: production runs the preview's build under a new deployment.
        const d = await answer(
          client.api.POST('/api/projects/{id}/environments/{env}/promote', { params: { path: { id: p.id, env: environment } }, body: deploymentId ? { deploymentId } : {} }),
        );
        if (opts.json) return printJson(d);
        console.log(`promoted ${environment} of ${p.slug} to production: now serving ${d.id} (${source(d)}, the build of ${d.promotedFrom ?? 'the preview'})`);
        const info = await answer(client.api.GET('/api/projects/{id}/info', { params: { path: { id: p.id } } })).catch(() => null);
        if (info?.runtime?.url) console.log(info.runtime.url);
      }),
    );

  program
    .command('cancel <deployment>')
    .description('cancel a queued or building deployment')
    .option('--json', 'print JSON: the deployment')
    .action(
      action(async (id: string, opts: { json?: boolean }) => {
        const d = await answer(savedClient().api.POST('/api/deployments/{id}/cancel', { params: { path: { id } } }));
        if (opts.json) return printJson(d);
        console.log(`deployment ${d.id} is ${d.status}`);
      }),
    );
}
