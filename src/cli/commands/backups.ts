import type { Command } from 'commander';
import { readStdin } from '../prompt.js';
import { answer, savedClient, type Answered, type ApiClient, type RequestBody } from '../client.js';
import { resolveProject } from '../link.js';
import { action, EXIT_FAILED, note, printJson, printTable, UsageError } from '../output.js';
import { followSse } from '../sse.js';
import { age, canAsk, clip, confirm, mb, positiveInt, seg } from './shared.js';

/** Records of contract section 8, as the API answers them. */
type Destination = Answered<'/api/backup-destinations/{id}', 'get'>;
type Run = Answered<'/api/backup-runs/{runId}', 'get'>;
type Restore = Answered<'/api/backup-restores/{restoreId}', 'get'>;

/**
 * Follows a run's or restore's SSE stream (snapshot, transition, progress, complete) to its end,
 * with a progress line on stderr (rewritten in place on a terminal); answers the final record.
 */
async function followProgress<T extends { status: string }>(client: ApiClient, url: string, readRecord: () => Promise<T>): Promise<T> {
  const tty = !!process.stderr.isTTY;
  let final: T | null = null;
  let lastPhase = '';
  let drawn = false;
  await followSse(client, url, (event, d) => {
    if (event === 'progress') {
      const text = `${d.phase} ${mb(d.bytes)}${d.totalBytes ? ` of ${mb(d.totalBytes)}` : ''}`;
      if (tty) {
        process.stderr.write(`\r${text}   `);
        drawn = true;
      } else if (d.phase !== lastPhase) note(text);
      lastPhase = d.phase;
    } else if (event === 'transition') {
      if (drawn) process.stderr.write('\n');
      drawn = false;
      note(`${d.from} -> ${d.to}`);
    } else if (event === 'complete') final = d as T;
  });
  if (drawn) process.stderr.write('\n');
  return final ?? (await readRecord());
}

/** A destination by id or name. */
async function findDestination(client: ApiClient, ref: string): Promise<Destination> {
  const list = await answer(client.api.GET('/api/backup-destinations'));
  const hit = list.find((d) => d.id === ref) ?? list.find((d) => d.name === ref);
  if (!hit) throw new Error(`no backup destination "${ref}" (by id or name) that you can read`);
  return hit;
}

/** `berth backups list|run|destinations|policies|restore`. */
// Long on purpose: the CLI's backup commands declared one after another (commander's chain); each
// action is a few lines, and the list reads as the command's help.
export function registerBackupCommands(program: Command): void {
  const backups = program.command('backups').description('backup destinations, policies, runs and restores');

  backups
    .command('list <project>')
    .description("list a project's backup policies and recent runs")
    .option('--json', 'print JSON: { policies, runs }')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const policies = await answer(client.api.GET('/api/projects/{projectId}/backup-policies', { params: { path: { projectId: p.id } } }));
        const runs = await answer(client.api.GET('/api/projects/{projectId}/backup-runs', { params: { path: { projectId: p.id }, query: { limit: 20 } } }));
        if (opts.json) return printJson({ policies, runs });
        if (policies.length === 0) console.log(`no backup policies on ${p.slug}`);
        else {
          printTable([
            ['POLICY', 'SCHEDULE', 'KEEP', 'NEXT', ''],
            ...policies.map((pol) => [
              pol.id,
              pol.cronExpression ? `${pol.cronExpression} (${pol.timezone})` : 'manual',
              `${pol.retainCount ?? '-'} runs / ${pol.retainDays ?? '-'} days`,
              pol.nextRunAt ?? '-',
              [pol.enabled ? '' : 'disabled', pol.overdue ? 'OVERDUE' : ''].filter(Boolean).join(' '),
            ]),
          ]);
        }
        if (runs.length) {
          console.log('');
          printTable([
            ['RUN', 'STATUS', 'TRIGGER', 'SIZE', 'AGE', ''],
            ...runs.map((r) => [r.id, r.status, r.trigger, mb(r.sizeBytes), age(r.finishedAt ?? r.createdAt), [r.protected ? 'protected' : '', clip(r.error, 50)].filter(Boolean).join(' ')]),
          ]);
        }
      }),
    );

  backups
    .command('run <policy>')
    .description('start a backup now and follow its progress; exits 1 unless it succeeds')
    .option('--json', 'print JSON: the run as it ended')
    .action(
      action(async (policyId: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const { runId } = await answer(client.api.POST('/api/backup-policies/{policyId}/run', { params: { path: { policyId } } }));
        note(`run ${runId} started`);
        const run = await followProgress<Run>(client, `/api/backup-runs/${seg(runId)}/stream`, () => answer(client.api.GET('/api/backup-runs/{runId}', { params: { path: { runId } } })));
        if (opts.json) printJson(run);
        else console.log(`run ${run.id} ${run.status}${run.sizeBytes != null ? ` (${mb(run.sizeBytes)})` : ''}${run.error ? `: ${run.error}` : ''}`);
        if (run.status !== 'succeeded') process.exitCode = EXIT_FAILED;
      }),
    );

  // ------------------------------------------------------------ destinations

  const destinations = backups.command('destinations').description('where backups are stored: local folders and S3-compatible buckets');
  destinations
    .command('list', { isDefault: true })
    .description('list backup destinations (secrets masked)')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { json?: boolean }) => {
        const list = await answer(savedClient().api.GET('/api/backup-destinations'));
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log('no backup destinations');
        printTable([
          ['ID', 'NAME', 'KIND', 'WHERE'],
          ...list.map((d) => [d.id, d.name, d.kind, d.kind === 'local' ? (d.path ?? '') : `${d.endpoint ?? 'aws'}/${d.bucket ?? ''}${d.prefix ? `/${d.prefix}` : ''}`]),
        ]);
      }),
    );
  destinations
    .command('create')
    .description('create a destination: --kind local --path DIR, or --kind s3 --bucket ... (secret key from --secret-access-key-stdin)')
    .requiredOption('--name <name>', 'a name to recognise it by')
    .requiredOption('--kind <kind>', 'local or s3')
    .option('--path <dir>', 'local: the folder on the server')
    .option('--endpoint <url>', 's3: the endpoint URL (none: AWS)')
    .option('--region <region>', 's3: the region')
    .option('--bucket <bucket>', 's3: the bucket')
    .option('--prefix <prefix>', 's3: a key prefix inside the bucket')
    .option('--access-key-id <id>', 's3: the access key id')
    .option('--secret-access-key-stdin', 's3: read the secret access key from standard input')
    .option('--secret-access-key <key>', 's3: the secret access key (visible to other users of this machine: prefer --secret-access-key-stdin)')
    .option('--force-path-style', 's3: path-style URLs (MinIO and most non-AWS endpoints)')
    .option('--json', 'print JSON: the destination')
    .action(
      action(async (opts: Record<string, string | boolean | undefined> & { json?: boolean }) => {
        if (opts.kind !== 'local' && opts.kind !== 's3') throw new UsageError(`--kind must be local or s3 (got "${opts.kind}")`);
        if (opts.secretAccessKey && opts.secretAccessKeyStdin) throw new UsageError('give the secret access key once: --secret-access-key or --secret-access-key-stdin');
        const body: RequestBody<'/api/backup-destinations', 'post'> = { name: String(opts.name), kind: opts.kind };
        for (const k of ['path', 'endpoint', 'region', 'bucket', 'prefix', 'accessKeyId', 'secretAccessKey'] as const) if (typeof opts[k] === 'string') body[k] = opts[k];
        if (opts.secretAccessKeyStdin) body.secretAccessKey = await readStdin();
        if (opts.forcePathStyle) body.forcePathStyle = true;
        const d = await answer(savedClient().api.POST('/api/backup-destinations', { body }));
        if (opts.json) return printJson(d);
        console.log(`created destination ${d.id} (${d.name}, ${d.kind})`);
      }),
    );
  destinations
    .command('test <destination>')
    .description('write, read back and delete a probe object; exits 1 when that fails')
    .option('--json', 'print JSON: { ok, error?, latencyMs }')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const d = await findDestination(client, ref);
        const out = await answer(client.api.POST('/api/backup-destinations/{id}/test', { params: { path: { id: d.id } } }));
        if (opts.json) printJson(out);
        else if (out.ok) console.log(`${d.name}: ok (${out.latencyMs} ms)`);
        else console.log(`${d.name}: failed: ${out.error ?? 'unknown error'}`);
        if (!out.ok) process.exitCode = EXIT_FAILED;
      }),
    );

  // ------------------------------------------------------------ policies

  const policies = backups.command('policies').description("a project's backup policies");
  policies
    .command('list <project>', { isDefault: true })
    .description("list a project's backup policies")
    .option('--json', 'print JSON')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const list = await answer(client.api.GET('/api/projects/{projectId}/backup-policies', { params: { path: { projectId: p.id } } }));
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log(`no backup policies on ${p.slug}`);
        printTable([
          ['ID', 'DESTINATION', 'SERVICE', 'SCHEDULE', 'KEEP', 'ENABLED'],
          ...list.map((pol) => [pol.id, pol.destinationId, pol.serviceId, pol.cronExpression ? `${pol.cronExpression} (${pol.timezone})` : 'manual', `${pol.retainCount ?? '-'} runs / ${pol.retainDays ?? '-'} days`, pol.enabled ? 'yes' : 'no']),
        ]);
      }),
    );
  policies
    .command('create <project>')
    .description("create a backup policy of a project's data volume (or --service) to a destination")
    .requiredOption('--destination <destination>', 'the destination (id or name)')
    .option('--service <service>', 'the service to back up (id or name; default: the data volume)')
    .option('--cron <expression>', 'schedule, a cron expression such as "0 3 * * *" (none: manual runs only)')
    .option('--timezone <tz>', 'the time zone of the schedule, e.g. Europe/Paris (default UTC)')
    .option('--retain-count <n>', 'keep this many successful runs')
    .option('--retain-days <n>', 'keep runs for this many days')
    .option('--disabled', 'create it disabled (no scheduled runs)')
    .option('--webhook', 'turn on its webhook trigger (the token is printed once)')
    .option('--json', 'print JSON: the policy')
    .action(
      action(async (ref: string, opts: { destination: string; service?: string; cron?: string; timezone?: string; retainCount?: string; retainDays?: string; disabled?: boolean; webhook?: boolean; json?: boolean }) => {
        const retainCount = positiveInt('--retain-count', opts.retainCount, 10000);
        const retainDays = positiveInt('--retain-days', opts.retainDays, 36500);
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const dest = await findDestination(client, opts.destination);
        let serviceId: string | undefined;
        if (opts.service) {
          const services = await answer(client.api.GET('/api/projects/{id}/services', { params: { path: { id: p.id } } }));
          const svc = services.find((s) => s.id === opts.service) ?? services.find((s) => s.name === opts.service);
          if (!svc) throw new Error(`${p.slug} has no service "${opts.service}" (by id or name): it has ${services.map((s) => s.name).join(', ') || 'none'}`);
          serviceId = svc.id;
        }
        const pol = await answer(
          client.api.POST('/api/projects/{projectId}/backup-policies', {
            params: { path: { projectId: p.id } },
            body: {
              destinationId: dest.id,
              ...(serviceId ? { serviceId } : {}),
              ...(opts.cron ? { cronExpression: opts.cron } : {}),
              ...(opts.timezone ? { timezone: opts.timezone } : {}),
              ...(retainCount ? { retainCount } : {}),
              ...(retainDays ? { retainDays } : {}),
              ...(opts.disabled ? { enabled: false } : {}),
              ...(opts.webhook ? { enableWebhook: true } : {}),
            },
          }),
        );
        if (opts.json) return printJson(pol);
        console.log(`created policy ${pol.id} of ${p.slug} to ${dest.name}: ${pol.cronExpression ? `${pol.cronExpression} (${pol.timezone}), next ${pol.nextRunAt ?? '-'}` : 'manual runs only'}`);
        if (pol.webhookToken) console.log(`webhook token (shown once): ${pol.webhookToken}`);
      }),
    );

  // ------------------------------------------------------------ restore

  backups
    .command('restore <run>')
    .description("replace a service's data with a backup run's: shows what is replaced, asks (or --yes), applies and follows it")
    .option('-y, --yes', 'do not ask for confirmation (needed without a terminal)')
    .option('--json', 'print JSON: the restore as it ended')
    .action(
      action(async (runId: string, opts: { yes?: boolean; json?: boolean }) => {
        if (!opts.yes && !canAsk()) throw new Error('a restore replaces data and needs a confirmation: there is no terminal to ask on, so pass --yes');
        const client = savedClient();
        const prepared = await answer(client.api.POST('/api/backup-runs/{runId}/restore/prepare', { params: { path: { runId } } }));
        const restoreId = { params: { path: { restoreId: prepared.restoreId } } };
        const readRestore = () => answer(client.api.GET('/api/backup-restores/{restoreId}', restoreId));
        const [restore, run] = await Promise.all([readRestore(), answer(client.api.GET('/api/backup-runs/{runId}', { params: { path: { runId } } }))]);
        const ofProject = { params: { path: { id: restore.projectId } } };
        const [services, project] = await Promise.all([
          answer(client.api.GET('/api/projects/{id}/services', ofProject)).catch(() => []),
          answer(client.api.GET('/api/projects/{id}', ofProject)).catch(() => null),
        ]);
        const svc = services.find((s) => s.id === restore.serviceId);
        note(`restore ${prepared.restoreId} is staged (the backup's checksum was verified):`);
        note(`  replaces: the ${svc ? `${svc.kind} service "${svc.name}"` : `service ${restore.serviceId}`} of project ${project?.slug ?? restore.projectId}; its current data is replaced`);
        note(`  with:     backup run ${run.id} of ${run.finishedAt ?? run.createdAt} (${mb(run.sizeBytes)}, sha256 ${run.sha256?.slice(0, 16) ?? '-'}…)`);
        if (!opts.yes && !(await confirm('Replace the data now?'))) {
          await answer(client.api.POST('/api/backup-restores/{restoreId}/cancel', restoreId)).catch(() => {});
          note('not restored: the staged restore was cancelled');
          process.exitCode = EXIT_FAILED;
          return;
        }
        await answer(client.api.POST('/api/backup-restores/{restoreId}/apply', { ...restoreId, body: { confirmationToken: prepared.confirmationToken } }));
        const done = await followProgress<Restore>(client, `/api/backup-restores/${seg(prepared.restoreId)}/stream`, readRestore);
        if (opts.json) printJson(done);
        else console.log(`restore ${done.id} ${done.status}${done.error ? `: ${done.error}` : ''}`);
        if (done.status !== 'succeeded') process.exitCode = EXIT_FAILED;
      }),
    );
}
