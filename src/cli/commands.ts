import type { Command } from 'commander';
import { ApiError, readClientConfig, savedClient, type ApiClient } from './client.js';
import { readSse } from './sse.js';

interface Project {
  id: string;
  name: string;
  slug: string;
  status: string;
  location?: string;
  routes?: { freeDomain?: string; primaryDomain?: string | null };
}

function fail(e: unknown): never {
  if (e instanceof ApiError) console.error(`error: ${e.message}${e.field ? ` (${e.field})` : ''} [${e.code}]`);
  else console.error(`error: ${(e as Error)?.message ?? e}`);
  process.exit(1);
}

/** Finds a project by id, slug or name. */
export async function findProject(client: ApiClient, ref: string): Promise<Project> {
  const list = await client.request<Project[]>('GET', '/api/projects');
  const hit = list.find((p) => p.id === ref) ?? list.find((p) => p.slug === ref) ?? list.find((p) => p.name === ref);
  if (!hit) throw new Error(`no project "${ref}" (by id, slug or name) that you can read`);
  return hit;
}

function action<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (e) {
      fail(e);
    }
  };
}

/** `berth projects`, `berth logs`, `berth env ...`, `berth backups ...`. */
export function registerClientCommands(program: Command): void {
  program
    .command('projects')
    .description('list the projects you can read')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { json?: boolean }) => {
        const list = await savedClient().request<Project[]>('GET', '/api/projects');
        if (opts.json) return void console.log(JSON.stringify(list, null, 2));
        if (list.length === 0) return void console.log('no projects');
        for (const p of list) console.log(`${p.id}  ${p.slug.padEnd(24)}  ${p.status.padEnd(8)}  ${p.location ?? 'local'}  ${p.routes?.primaryDomain ?? p.routes?.freeDomain ?? ''}`);
      }),
    );

  program
    .command('logs <project>')
    .description("print a project's runtime logs (--follow streams them)")
    .option('-n, --limit <n>', 'how many lines', '200')
    .option('-f, --follow', 'keep streaming new lines')
    .action(
      action(async (ref: string, opts: { limit: string; follow?: boolean }) => {
        const client = savedClient();
        const p = await findProject(client, ref);
        const lines = await client.request<Array<{ ts: string; stream: string; line: string }>>('GET', `/api/projects/${p.id}/logs?limit=${encodeURIComponent(opts.limit)}`);
        for (const l of lines) (l.stream === 'stderr' ? process.stderr : process.stdout).write(`${l.line}\n`);
        if (!opts.follow) return;
        const cfg = readClientConfig();
        const token = process.env.BERTH_TOKEN ?? cfg.token;
        const res = await fetch(`${client.server}/api/projects/${p.id}/logs/stream`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
        if (!res.ok || !res.body) throw new Error(`log stream answered ${res.status}`);
        await readSse(res.body, (event, data) => {
          if (event !== 'log') return;
          const l = JSON.parse(data) as { stream: string; line: string };
          (l.stream === 'stderr' ? process.stderr : process.stdout).write(`${l.line}\n`);
        });
      }),
    );

  const env = program.command('env').description("a project's environment variables");
  env
    .command('list <project>')
    .description('list variables (secret values are masked)')
    .option('-e, --environment <name>', 'environment', 'production')
    .action(
      action(async (ref: string, opts: { environment: string }) => {
        const client = savedClient();
        const p = await findProject(client, ref);
        const vars = await client.request<Array<{ key: string; value: string; isSecret: boolean }>>('GET', `/api/projects/${p.id}/env?environment=${encodeURIComponent(opts.environment)}`);
        for (const v of vars) console.log(`${v.key}=${v.value}${v.isSecret ? '  (secret)' : ''}`);
      }),
    );
  env
    .command('set <project> <pairs...>')
    .description('set KEY=VALUE pairs (only these keys change)')
    .option('-e, --environment <name>', 'environment', 'production')
    .option('-s, --secret', 'store the values as secrets')
    .action(
      action(async (ref: string, pairs: string[], opts: { environment: string; secret?: boolean }) => {
        const upserts = pairs.map((pair) => {
          const i = pair.indexOf('=');
          if (i <= 0) throw new Error(`"${pair}" is not KEY=VALUE`);
          return { key: pair.slice(0, i), value: pair.slice(i + 1), isSecret: !!opts.secret };
        });
        const client = savedClient();
        const p = await findProject(client, ref);
        await client.request('PATCH', `/api/projects/${p.id}/env`, { environment: opts.environment, upserts, deletes: [] });
        console.log(`set ${upserts.map((u) => u.key).join(', ')} on ${p.slug} (${opts.environment})`);
      }),
    );
  env
    .command('unset <project> <keys...>')
    .description('delete variables (only these keys change)')
    .option('-e, --environment <name>', 'environment', 'production')
    .action(
      action(async (ref: string, keys: string[], opts: { environment: string }) => {
        const client = savedClient();
        const p = await findProject(client, ref);
        await client.request('PATCH', `/api/projects/${p.id}/env`, { environment: opts.environment, upserts: [], deletes: keys });
        console.log(`removed ${keys.join(', ')} from ${p.slug} (${opts.environment})`);
      }),
    );

  const backups = program.command('backups').description("a project's backup policies and runs");
  backups
    .command('list <project>')
    .description('list backup policies and recent runs')
    .action(
      action(async (ref: string) => {
        const client = savedClient();
        const p = await findProject(client, ref);
        const policies = await client.request<any[]>('GET', `/api/projects/${p.id}/backup-policies`);
        for (const pol of policies) {
          console.log(`policy ${pol.id}  ${pol.cronExpression ?? 'manual'}  keep ${pol.retainCount ?? '-'} runs / ${pol.retainDays ?? '-'} days${pol.overdue ? '  OVERDUE' : ''}`);
        }
        const runs = await client.request<any[]>('GET', `/api/projects/${p.id}/backup-runs`);
        for (const r of runs.slice(0, 20)) console.log(`  run ${r.id}  ${r.status.padEnd(12)}  ${r.trigger.padEnd(7)}  ${r.sizeBytes ?? '-'} bytes  ${r.finishedAt ?? r.startedAt ?? ''}${r.protected ? '  protected' : ''}`);
      }),
    );
  backups
    .command('run <policyId>')
    .description('start a backup now and follow its progress')
    .action(
      action(async (policyId: string) => {
        const client = savedClient();
        const { runId } = await client.request<{ runId: string }>('POST', `/api/backup-policies/${encodeURIComponent(policyId)}/run`);
        console.log(`run ${runId} started`);
        const token = process.env.BERTH_TOKEN ?? readClientConfig().token;
        const res = await fetch(`${client.server}/api/backup-runs/${runId}/stream`, { headers: { authorization: `Bearer ${token}` } });
        if (!res.ok || !res.body) return;
        let final = '';
        await readSse(res.body, (event, data) => {
          const d = JSON.parse(data);
          if (event === 'progress') process.stderr.write(`\r${d.phase} ${(Number(d.bytes) / 1048576).toFixed(1)} MB${d.totalBytes ? ` of ${(Number(d.totalBytes) / 1048576).toFixed(1)} MB` : ''}   `);
          if (event === 'complete') final = d.status;
        });
        process.stderr.write('\n');
        console.log(`run ${runId} ${final || 'ended'}`);
        if (final && final !== 'succeeded') process.exit(1);
      }),
    );
}
