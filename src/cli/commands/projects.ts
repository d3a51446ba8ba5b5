import type { Command } from 'commander';
import { answer, savedClient } from '../client.js';
import { resolveProject } from '../link.js';
import { action, note, printJson, printTable } from '../output.js';

/** `berth projects`, `berth open [PROJECT]`, `berth status [PROJECT]`. */
export function registerProjectCommands(program: Command): void {
  program
    .command('projects')
    .description('list the projects you can read')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { json?: boolean }) => {
        const list = await answer(savedClient().api.GET('/api/projects'));
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log('no projects');
        printTable([
          ['ID', 'SLUG', 'STATUS', 'LOCATION', 'URL'],
          ...list.map((p) => [p.id, p.slug, p.status, p.location ?? 'local', p.routes?.primaryDomain ?? p.routes?.freeDomain ?? '']),
        ]);
      }),
    );

  program
    .command('open [project]')
    .description("print the URL a project is served at (default: this folder's project)")
    .option('--json', 'print JSON: { project, url, state }')
    .action(
      action(async (ref: string | undefined, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const info = await answer(client.api.GET('/api/projects/{id}/info', { params: { path: { id: p.id } } }));
        const url = info.runtime?.url ?? null;
        if (opts.json) return printJson({ project: p.id, url, state: info.runtime?.state ?? null });
        if (!url) throw new Error(`${p.slug} has no URL yet: deploy it first`);
        if (info.runtime.state === 'not_deployed') note(`${p.slug} is not deployed yet: the URL answers once it is`);
        if (info.runtime.state === 'degraded') note(`${p.slug} is degraded: ${info.runtime.reason ?? 'its health checks fail'}`);
        console.log(url);
      }),
    );

  program
    .command('status [project]')
    .description("the state of a project's app (running, degraded with the reason, sleeping, ...), its URL and last build")
    .option('--json', "print JSON: the project's info (runtime, build, source)")
    .action(
      action(async (ref: string | undefined, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const info = await answer(client.api.GET('/api/projects/{id}/info', { params: { path: { id: p.id } } }));
        if (opts.json) return printJson({ project: p.id, ...info });
        const rt = info.runtime;
        const rows = [
          ['STATE', rt.state.replace(/_/g, ' ')],
          ...(rt.reason ? [['REASON', `${rt.reason}${rt.degradedSince ? ` (since ${rt.degradedSince})` : ''}`]] : []),
          ['URL', rt.url],
          ['BUILD', info.build.lastDeploymentId ? `${info.build.lastDeploymentId} ${info.build.status ?? ''}`.trim() : 'none'],
        ];
        for (const [k, v] of rows) console.log(`${k!.padEnd(7)}${v}`);
      }),
    );
}
