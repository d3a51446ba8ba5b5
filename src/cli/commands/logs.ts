import type { Command } from 'commander';
import { answer, savedClient } from '../client.js';
import { resolveProject } from '../link.js';
import { action, note } from '../output.js';
import { followSse } from '../sse.js';
import type { LogLine } from './deployments.js';
import { parseSince, positiveInt, seg } from './shared.js';
import { UsageError } from '../output.js';


/** A line as the commands print it (a search answers `source` too; docs/logs.md). */
type Printed = Pick<LogLine, 'ts' | 'line'> & { stream?: LogLine['stream']; source?: string };

/**
 * `berth logs [PROJECT] [--follow] [--since T] [--until T] [--grep TEXT] [--stream S] [--build DEPLOYMENT]
 * [-n N] [--json]`: the project's kept runtime log (or a deployment's build log), each line as
 * `<ts>  <line>`, stderr lines on stderr. Without --follow it searches the kept logs once (`--grep`,
 * `--until`, `--stream` narrow it); with --follow it reads only the stream, which sends the backlog
 * and then live lines, so the backlog is printed once.
 */
export function registerLogCommands(program: Command): void {
  program
    .command('logs [project]')
    .description("print a project's runtime log with timestamps (default: this folder's project); --build DEPLOYMENT for a build log")
    .option('-f, --follow', 'keep printing new lines as they come (a build log ends with its build)')
    .option('--since <time>', 'only lines after this time: ISO (2024-05-01T12:00:00Z) or a duration before now (30s, 10m, 2h, 1d)')
    .option('--until <time>', 'only lines up to this time (ISO or a duration before now); not with --follow')
    .option('--grep <text>', 'only lines holding this text (case-sensitive); not with --follow')
    .option('--stream <list>', 'which kept logs: a comma list of runtime, build, request, stdout, stderr (default runtime); not with --follow')
    .option('--build <deployment>', "the build log of this deployment instead of the app's runtime log")
    .option('-n, --limit <n>', 'the last N lines of the backlog (1..10000)', '200')
    .option('--json', 'one JSON object per line: { ts, stream, line }')
    .action(
      action(async (ref: string | undefined, opts: { follow?: boolean; since?: string; until?: string; grep?: string; stream?: string; build?: string; limit: string; json?: boolean }) => {
        const limit = positiveInt('--limit', opts.limit, 10000)!;
        const since = opts.since === undefined ? undefined : parseSince(opts.since);
        const until = opts.until === undefined ? undefined : parseSince(opts.until, Date.now(), '--until');
        const searching = opts.grep !== undefined || until !== undefined || opts.stream !== undefined;
        if (searching && (opts.follow || opts.build)) throw new UsageError('--grep, --until and --stream search the kept logs: not with --follow or --build');
        const print = (l: Printed) => {
          if (since && !(l.ts > since)) return;
          const source = l.source && l.source !== 'runtime' ? `[${l.source}] ` : '';
          if (opts.json) process.stdout.write(JSON.stringify({ ts: l.ts, ...(l.source ? { source: l.source } : {}), stream: l.stream, line: l.line }) + '\n');
          else (l.stream === 'stderr' ? process.stderr : process.stdout).write(`${l.ts}  ${source}${l.line}\n`);
        };
        const client = savedClient();
        const query = { limit, ...(since ? { since } : {}) };
        const search = { ...query, ...(until ? { until } : {}), ...(opts.grep !== undefined ? { q: opts.grep } : {}), ...(opts.stream ? { stream: opts.stream } : {}) };
        let base: string;
        let backlog: () => Promise<Printed[]>;
        if (opts.build) {
          const id = opts.build;
          base = `/api/deployments/${seg(id)}/logs`;
          backlog = () => answer(client.api.GET('/api/deployments/{id}/logs', { params: { path: { id }, query } }));
          // A build log belongs to its project: a PROJECT named beside --build must be that one.
          if (ref) {
            const p = await resolveProject(client, ref);
            const d = await answer(client.api.GET('/api/deployments/{id}', { params: { path: { id } } }));
            if (d.projectId !== p.id) throw new Error(`deployment ${opts.build} is not a deployment of ${p.slug}`);
          }
        } else {
          const p = await resolveProject(client, ref);
          base = `/api/projects/${seg(p.id)}/logs`;
          backlog = () => answer(client.api.GET('/api/projects/{id}/logs', { params: { path: { id: p.id }, query: search } }));
        }

        if (!opts.follow) {
          for (const l of await backlog()) print(l);
          return;
        }
        const qs = new URLSearchParams({ limit: String(limit) });
        if (since) qs.set('since', since);
        // The build-log stream sends the whole (bounded) build log; `since` is applied here.
        const url = opts.build ? `${base}/stream` : `${base}/stream?${qs}`;
        await followSse(client, url, (event, data) => {
          if (event === 'log') print(data as LogLine);
        });
        if (opts.build) {
          const d = await answer(client.api.GET('/api/deployments/{id}', { params: { path: { id: opts.build } } })).catch(() => null);
          if (d) note(`deployment ${opts.build} is ${d.status}`);
        } else note('the log stream was closed by the server');
      }),
    );
}
