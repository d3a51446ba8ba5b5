import type { Command } from 'commander';
import { ApiError, apiErrorFrom, savedClient, type Answered, type ApiClient } from '../client.js';
import { resolveProject } from '../link.js';
import { action, note, printJson } from '../output.js';

type Direction = 'to-cloud' | 'to-self-hosted';
type TransferAnswer = Answered<'/api/projects/{id}/transfer/to-cloud', 'post'>;

/**
 * POST /api/projects/:id/transfer/<direction> with `{ includeData }`. Not through openapi-fetch: a
 * transfer with data dumps, uploads and loads each database before the server answers, which can
 * take longer than fetch's 5-minute wait for an answer's headers, so this request waits as long as
 * the server works (Ctrl-C still ends it).
 */
async function transfer(client: ApiClient, projectId: string, direction: Direction, includeData: boolean): Promise<TransferAnswer> {
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  try {
    const res = await request(`${client.server}/api/projects/${encodeURIComponent(projectId)}/transfer/${direction}`, {
      method: 'POST',
      dispatcher,
      headers: { accept: 'application/json', 'content-type': 'application/json', ...(client.token ? { authorization: `Bearer ${client.token}` } : {}) },
      body: JSON.stringify(includeData ? { includeData: true } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) {
      const e = apiErrorFrom(res.statusCode, '', text);
      // A service that cannot give its data (stopped; a kind without dumps) is named by the body's field: say the flag instead.
      if (e.field === 'includeData') throw new ApiError(e.status, e.code, e.message.replace(/\bincludeData\b/g, '--include-data'), '--include-data');
      throw e;
    }
    return (JSON.parse(text) as { data: TransferAnswer }).data;
  } finally {
    await dispatcher.close().catch(() => {});
  }
}

type Progress = { phase: string; service: string; bytes: number; totalBytes?: number };

const mb = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MB`;

/** One progress line: `cache: send 12.0 MB / 40.0 MB (30%)`. */
export function progressLine(p: Progress): string {
  const of = p.totalBytes ? ` / ${mb(p.totalBytes)} (${Math.floor((100 * p.bytes) / Math.max(1, p.totalBytes))}%)` : '';
  return `${p.service}: ${p.phase} ${mb(p.bytes)}${of}`;
}

/**
 * With data: `POST /api/projects/:id/transfers` (202, the transfer runs on the server), then its
 * events followed to the end, each progress event shown by `onProgress`; answers the transfer's result.
 */
async function transferInBackground(client: ApiClient, projectId: string, direction: Direction, onProgress: (p: Progress) => void): Promise<TransferAnswer> {
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  const auth: Record<string, string> = client.token ? { authorization: `Bearer ${client.token}` } : {};
  const base = `${client.server}/api/projects/${encodeURIComponent(projectId)}/transfers`;
  try {
    const res = await request(base, {
      method: 'POST',
      dispatcher,
      headers: { accept: 'application/json', 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ to: direction === 'to-cloud' ? 'cloud' : 'self-hosted', includeData: true }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 202) throw flagError(apiErrorFrom(res.statusCode, '', text));
    const id = (JSON.parse(text) as { data: { id: string } }).data.id;
    const stream = await request(`${base}/${encodeURIComponent(id)}/events`, { dispatcher, headers: { accept: 'text/event-stream', ...auth } });
    if (stream.statusCode !== 200) throw apiErrorFrom(stream.statusCode, '', await stream.body.text());
    let buffered = '';
    for await (const chunk of stream.body) {
      buffered += chunk.toString();
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const event = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (!event || data === undefined) continue;
        if (event === 'progress') onProgress(JSON.parse(data) as Progress);
        if (event === 'complete') {
          const record = JSON.parse(data) as { status: string; result: TransferAnswer | null; error: { code: string; message: string; field?: string } | null };
          if (record.status === 'succeeded' && record.result) return record.result;
          const e = record.error ?? { code: 'INTERNAL', message: 'the transfer failed' };
          throw flagError(new ApiError(e.code === 'CONFLICT' ? 409 : 500, e.code, e.message, e.field));
        }
      }
    }
    throw new ApiError(0, 'STREAM_ENDED', `the server stopped reporting the transfer ${id}: see GET /api/projects/${projectId}/transfers/${id}`);
  } finally {
    await dispatcher.close().catch(() => {});
  }
}

/** A service that cannot give its data (stopped) is named by the body's field: say the flag instead. */
function flagError(e: ApiError): ApiError {
  return e.field === 'includeData' ? new ApiError(e.status, e.code, e.message.replace(/\bincludeData\b/g, '--include-data'), '--include-data') : e;
}

/** What moved, one line per kind of thing (names of services, counts of the rest; never values). */
export function describeTransfer(t: TransferAnswer['transferred']): string[] {
  const names = (list: string[]) => (list.length ? list.join(', ') : 'none');
  return [
    `managed services: ${names(t.managedServices)}`,
    ...(t.serviceData ? [`services' data:   ${names(t.serviceData)}`] : []),
    `environments:     ${names(t.environments)}`,
    `domains:          ${names(t.domains)}`,
    `env vars:         ${t.envVars} (${t.secrets} secret)`,
    `route rules:      ${t.routeRules}`,
  ];
}

/** `berth transfer to-cloud|to-self-hosted [PROJECT] [--include-data]`: move a project between this server and its linked cloud (docs/cloud.md). */
export function registerTransferCommands(program: Command): void {
  const group = program.command('transfer').description('move a project to the linked cloud and back (project admins; the server must be linked: BERTH_CLOUD_URL)');
  const directions: Array<[Direction, string, string]> = [
    ['to-cloud', "move a local project to the linked cloud (default: this folder's project); the local copy stops", 'moved to the cloud as'],
    ['to-self-hosted', "bring a cloud project back to this server (default: this folder's project); the cloud copy is deleted", 'back on this server from'],
  ];
  for (const [direction, description, done] of directions) {
    group
      .command(`${direction} [project]`)
      .description(description)
      .option('--include-data', "move the data too: a native dump of each managed service (pg_dump, mariadb-dump, Redis RDB) is loaded into the new instance on the other side; every service must be running (else nothing moves)")
      .option('--json', 'print JSON: the transfer (id, location, cloudProjectId, transferred)')
      .action(
        action(async (ref: string | undefined, opts: { includeData?: boolean; json?: boolean }) => {
          const client = savedClient();
          const p = await resolveProject(client, ref);
          if (!opts.json) note(`transferring ${p.slug} ${direction}${opts.includeData ? ' with its services\' data' : ''}...`);
          const t = opts.includeData
            ? await transferInBackground(client, p.id, direction, (pr) => {
                // On a terminal one line redrawn in place; else one line per event (at most 4 a second).
                if (opts.json) return;
                if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K  ${progressLine(pr)}`);
                else note(`  ${progressLine(pr)}`);
              }).finally(() => {
                if (!opts.json && process.stderr.isTTY) process.stderr.write('\n');
              })
            : await transfer(client, p.id, direction, false);
          if (opts.json) return printJson(t);
          console.log(`${p.slug} ${done} ${t.cloudProjectId}${t.cloudCopyDeleted === false ? ' (the cloud copy could not be deleted: delete it there)' : ''}`);
          for (const line of describeTransfer(t.transferred)) console.log(`  ${line}`);
        }),
      );
  }
}
