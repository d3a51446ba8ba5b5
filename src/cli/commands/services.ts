import type { Command } from 'commander';
import { answer, savedClient, type RequestBody } from '../client.js';
import { resolveProject } from '../link.js';
import { action, note, printJson, printTable, UsageError } from '../output.js';
import { followSse } from '../sse.js';
import { registerConnectCommand } from './services-connect.js';
import { findService, KINDS, type Kind, type Service } from './services-find.js';
import { age, positiveInt, seg } from './shared.js';

/** A decimal option in min..max, or a usage error naming the option. */
function decimal(option: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n < min || n > max) throw new UsageError(`${option} must be a number from ${min} to ${max} (got "${value}")`);
  return n;
}

const where = (s: Service) => (s.internalHost ? `${s.internalHost}:${s.port}` : s.port ? `:${s.port}` : '-');

/** `berth services ls|create|rm|logs|connect`: a project's managed databases (contract section 19). */
export function registerServiceCommands(program: Command): void {
  const services = program.command('services').description("a project's databases: PostgreSQL, MariaDB (mysql), Redis that Berth runs beside the app");
  registerList(services);
  registerCreate(services);
  registerRemove(services);
  registerLogs(services);
  registerConnectCommand(services);
}

function registerList(services: Command): void {
  services
    .command('ls [project]', { isDefault: true })
    .alias('list')
    .description("list a project's services (default: this folder's project)")
    .option('--json', 'print JSON: the services')
    .action(
      action(async (ref: string | undefined, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const list = await answer(client.api.GET('/api/projects/{id}/services', { params: { path: { id: p.id } } }));
        if (opts.json) return printJson(list);
        const managed = list.filter((s) => s.managed);
        if (managed.length === 0) return void console.log(`no managed services in ${p.slug} (berth services create ${p.slug} postgres db)`);
        printTable([
          ['NAME', 'KIND', 'VERSION', 'STATUS', 'ADDRESS', 'CPU', 'MEMORY', 'DISK', 'AGE'],
          ...managed.map((s) => [
            s.name,
            s.kind,
            s.version ?? '-',
            s.status === 'failed' && s.error ? `failed: ${s.error}` : (s.status ?? '-'),
            where(s),
            String(s.resources?.cpuCores ?? '-'),
            s.resources ? `${s.resources.memoryMb} MB` : '-',
            s.resources ? `${s.resources.diskMb} MB` : '-',
            age(s.createdAt),
          ]),
        ]);
      }),
    );

}

function registerCreate(services: Command): void {
  services
    .command('create <project> <kind> <name>')
    .description('create and start a managed database: KIND is postgres, mysql (MariaDB) or redis (mongodb under docker); `GET /api/services/kinds` lists versions')
    .option('--version <version>', "the server's version (default: the newest this server offers)")
    .option('--cpu-cores <n>', 'CPU cores (0.1..4)')
    .option('--memory-mb <n>', 'memory in MB (64..16384)')
    .option('--disk-mb <n>', 'disk in MB (128..1048576)')
    .option('--json', 'print JSON: the service')
    .action(
      action(async (ref: string, kind: string, name: string, opts: { version?: string; cpuCores?: string; memoryMb?: string; diskMb?: string; json?: boolean }) => {
        if (!KINDS.includes(kind as Kind)) throw new UsageError(`KIND must be one of ${KINDS.join(', ')} (got "${kind}")`);
        const resources = {
          ...(opts.cpuCores !== undefined ? { cpuCores: decimal('--cpu-cores', opts.cpuCores, 0.1, 4) } : {}),
          ...(opts.memoryMb !== undefined ? { memoryMb: positiveInt('--memory-mb', opts.memoryMb, 16384) } : {}),
          ...(opts.diskMb !== undefined ? { diskMb: positiveInt('--disk-mb', opts.diskMb, 1048576) } : {}),
        };
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const body: RequestBody<'/api/projects/{id}/services', 'post'> = { kind: kind as Kind, name, ...(opts.version ? { version: opts.version } : {}), ...(Object.keys(resources).length ? { resources } : {}) };
        const s = await answer(client.api.POST('/api/projects/{id}/services', { params: { path: { id: p.id } }, body }));
        if (opts.json) return printJson(s);
        console.log(`created ${s.kind} ${s.version ?? ''} "${s.name}" in ${p.slug} (${s.status ?? 'attached'}); its URL reaches the app as ${s.name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`);
      }),
    );

}

function registerRemove(services: Command): void {
  services
    .command('rm <project> <name>')
    .alias('remove')
    .description('stop and delete a managed service and its data (needs admin on the project)')
    .option('--keep-volume', 'keep its data folder on the server')
    .option('--json', 'print JSON: the answer')
    .action(
      action(async (ref: string, name: string, opts: { keepVolume?: boolean; json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const s = await findService(client, p, name);
        const out = await answer(client.api.DELETE('/api/projects/{id}/services/{sid}', { params: { path: { id: p.id, sid: s.id }, query: opts.keepVolume ? { keepVolume: true } : {} } }));
        if (opts.json) return printJson(out);
        console.log(`deleted ${s.name} from ${p.slug}${out.keptVolume ? ' (its data folder is kept on the server)' : ''}`);
      }),
    );

}

function registerLogs(services: Command): void {
  services
    .command('logs <project> <name>')
    .description("print a managed service's output (passwords redacted)")
    .option('-f, --follow', 'keep printing new lines as they come')
    .option('-n, --limit <n>', 'the last N lines (1..500)', '200')
    .option('--json', 'one JSON object per line: { line }')
    .action(
      action(async (ref: string, name: string, opts: { follow?: boolean; limit: string; json?: boolean }) => {
        const limit = positiveInt('--limit', opts.limit, 500)!;
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const s = await findService(client, p, name);
        const print = (l: { line: string }) => process.stdout.write((opts.json ? JSON.stringify({ line: l.line }) : l.line) + '\n');
        if (!opts.follow) {
          const lines = await answer(client.api.GET('/api/projects/{id}/services/{sid}/logs', { params: { path: { id: p.id, sid: s.id }, query: { limit } } }));
          for (const l of lines) print(l);
          return;
        }
        // The stream sends the backlog, then live lines: each printed once.
        await followSse(client, `/api/projects/${seg(p.id)}/services/${seg(s.id)}/logs/stream?limit=${limit}`, (event, data) => {
          if (event === 'log') print(data as { line: string });
        });
        note('the log stream was closed by the server');
      }),
    );
}
