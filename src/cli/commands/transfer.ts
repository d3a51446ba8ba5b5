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
          const t = await transfer(client, p.id, direction, opts.includeData === true);
          if (opts.json) return printJson(t);
          console.log(`${p.slug} ${done} ${t.cloudProjectId}${t.cloudCopyDeleted === false ? ' (the cloud copy could not be deleted: delete it there)' : ''}`);
          for (const line of describeTransfer(t.transferred)) console.log(`  ${line}`);
        }),
      );
  }
}
