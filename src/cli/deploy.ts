/**
 * `berth deploy [DIR]` (contract section 12): packs the folder (pack.ts), uploads it through a
 * folder-upload session, scans it, ensures the project (the folder's linked one, `--project`, or a
 * new one), starts a deployment, streams its build log, waits until it is ready (or fails) and prints
 * the URL. Exit 0 when ready (or queued with `--no-wait`), 1 when it failed or was cancelled or
 * superseded, 2 on usage errors. The folder is linked to its project in `DIR/.berth/project.json`.
 */
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { answer, apiErrorFrom, savedClient, type Answered, type ApiClient, type RequestBody } from './client.js';
import { checkEnvironmentName, ensureEnvironment, environmentUrl } from './environments.js';
import { lookupProject, readLink, sameServer, writeLink, type ProjectSummary } from './link.js';
import { action, describeError, EXIT_FAILED, EXIT_OK, note, printJson, UsageError } from './output.js';
import { human, listFiles, packFiles, ProgressBar } from './pack.js';
import type { Deployment, LogLine } from './commands/deployments.js';
import { followSse } from './sse.js';

// ---------------------------------------------------------------- upload with a progress bar

/** Where and how the tarball goes: the folder-upload session `POST /api/projects/folder/session` opens. */
type Target = Answered<'/api/projects/folder/session', 'post'>;

function uploadFile(target: Target, file: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const u = new URL(target.url);
    const mod = u.protocol === 'https:' ? https : http;
    const progress = new ProgressBar('uploading', size, (done) => `${human(done)}/${human(size)}`);
    const req = mod.request(u, { method: target.method, headers: { ...target.headers, 'content-length': String(size) } });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        if ((res.statusCode ?? 500) >= 400) return reject(apiErrorFrom(res.statusCode ?? 500, res.statusMessage ?? '', text));
        progress.done();
        resolve(undefined);
      });
    });
    req.on('error', reject);
    let sent = 0;
    const rs = createReadStream(file);
    rs.on('data', (c) => {
      sent += c.length;
      progress.update(sent);
    });
    rs.on('error', reject);
    rs.pipe(req);
  });
}

// ---------------------------------------------------------------- waiting: limits

const TERMINAL = ['ready', 'failed', 'cancelled', 'superseded'];
/** How often the deployment is read while waiting, and for how long at most. */
const POLL_MS = 1000;
const WAIT_MS = 30 * 60 * 1000;
/** How many build log lines a failure prints. */
const TAIL_LINES = 20;

const CONFIG_KEYS = ['framework', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory', 'packageManager', 'runtime', 'port'] as const;

export interface DeployOptions {
  name?: string;
  project?: string;
  env: string;
  /** `--no-wait` sets it false. */
  wait: boolean;
  json?: boolean;
  /** `--no-cache` sets it false: the build neither restores nor saves the project's build cache. */
  cache?: boolean;
  /** One-off overrides of the plan, saved to the project's config before the deployment starts. */
  installCommand?: string;
  buildCommand?: string;
  startCommand?: string;
}

/** The command flags `berth deploy` saves to the project's config (option name -> config field). */
const COMMAND_FLAGS = [
  ['--install-command', 'installCommand'],
  ['--build-command', 'buildCommand'],
  ['--start-command', 'startCommand'],
] as const;

/**
 * `--install-command`, `--build-command`, `--start-command`: PATCHed into the project's config (an
 * empty value clears it: the detected plan's command is used), so this deployment and the later
 * ones run them; says what it saved.
 */
async function saveCommandFlags(client: ApiClient, project: ProjectSummary, opts: DeployOptions): Promise<void> {
  const patch: RequestBody<'/api/projects/{id}', 'patch'> = {};
  for (const [, field] of COMMAND_FLAGS) {
    const v = opts[field];
    if (v !== undefined) patch[field] = v.trim() === '' ? null : v;
  }
  if (!Object.keys(patch).length) return;
  await answer(client.api.PATCH('/api/projects/{id}', { params: { path: { id: project.id } }, body: patch }));
  for (const [flag, field] of COMMAND_FLAGS) {
    if (!(field in patch)) continue;
    const v = patch[field];
    note(v === null ? `${flag}: cleared the project's ${field}; the detected plan's is used` : `${flag}: saved to the project's config as ${field} (this and later deployments use it): ${v}`);
  }
}

/** Ctrl-C while waiting: the deployment goes on without us. */
class Interrupted extends Error {}

/** A pause that ends early on `signal` or when `wake` is called. */
function pause(ms: number, signal: AbortSignal): { done: Promise<void>; wake(): void } {
  let wake = () => {};
  const done = new Promise<void>((resolve) => {
    const t = setTimeout(finish, ms);
    function finish() {
      clearTimeout(t);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    wake = finish;
    signal.addEventListener('abort', finish, { once: true });
  });
  return { done, wake };
}

// ---------------------------------------------------------------- which project

interface Choice {
  /** The project to update, or null: create one named `name`. */
  existing: ProjectSummary | null;
  name: string;
}

async function chooseProject(client: ApiClient, root: string, opts: DeployOptions): Promise<Choice> {
  const name = (opts.name ?? path.basename(root)).slice(0, 100) || 'project';
  if (opts.project) {
    const hit = await lookupProject(client, opts.project);
    if (!hit) throw new Error(`no project "${opts.project}" (by id, slug or name) that you can read`);
    if (opts.name) note(`--name is ignored: deploying to the existing project ${hit.slug}`);
    return { existing: hit, name };
  }
  const link = readLink(root);
  if (link && sameServer(link.server, client.server)) {
    const me = await answer(client.api.GET('/api/auth/me'));
    if (link.orgId !== me.org?.id) {
      throw new UsageError(
        `this folder is linked to a project of org ${link.orgId}, but you are signed in to ${me.org ? `${me.org.name} (${me.org.id})` : 'no org'}: ` +
          `switch with \`berth switch ${link.orgId}\`, or pass --project`,
      );
    }
    const hit = await lookupProject(client, link.projectId);
    if (!hit) {
      throw new Error(
        `the project this folder is linked to (${link.projectId}) is gone or you cannot read it: pass --project, or remove ${path.join(root, '.berth')} to create a new project`,
      );
    }
    if (opts.name) note(`--name is ignored: this folder is linked to the project ${hit.slug}`);
    return { existing: hit, name };
  }
  if (link) note(`this folder is linked to a project on ${link.server}, not ${client.server}: creating a project here (the link will point here)`);
  return { existing: null, name };
}

// ---------------------------------------------------------------- waiting

/**
 * Streams the deployment's build log (SSE) to `out` while reading the deployment until its status
 * is terminal (the stream may end first, or fail: reading goes on). Answers the final record.
 */
async function waitForDeployment(client: ApiClient, deployment: Deployment, out: NodeJS.WritableStream, signal: AbortSignal): Promise<Deployment> {
  const stream = new AbortController();
  const stopStream = () => stream.abort();
  signal.addEventListener('abort', stopStream, { once: true });
  let wakeNap = () => {};
  let streamOver = false;
  let streamOverSeen = false;
  const streaming = (async () => {
    try {
      await followSse(
        client,
        `/api/deployments/${encodeURIComponent(deployment.id)}/logs/stream`,
        (event, data: LogLine) => {
          if (event === 'log' && typeof data?.line === 'string') out.write(`${data.line}\n`);
        },
        stream.signal,
      );
    } catch (e) {
      if (!stream.signal.aborted) note(`(the build log stream broke: ${describeError(e).replace(/^error: /, '')}; waiting without it)`);
    } finally {
      streamOver = true;
      wakeNap();
    }
  })();

  try {
    const deadline = Date.now() + WAIT_MS;
    let status = deployment.status;
    for (;;) {
      if (signal.aborted) throw new Interrupted();
      const now = await answer(client.api.GET('/api/deployments/{id}', { params: { path: { id: deployment.id } } }));
      if (now.status !== status && !TERMINAL.includes(now.status)) note(`${now.status}…`);
      status = now.status;
      if (TERMINAL.includes(now.status)) {
        // The stream closes shortly after the deployment is done: let it deliver its last lines.
        if (!streamOver) await Promise.race([streaming, pause(3000, signal).done]);
        return now;
      }
      if (Date.now() > deadline) throw new Error(`gave up waiting after ${WAIT_MS / 60000} minutes: deployment ${deployment.id} is still ${now.status} and goes on`);
      // Read again in a second, or at once when the stream has just ended (the deployment is probably done).
      if (streamOver && !streamOverSeen) {
        streamOverSeen = true;
        continue;
      }
      const nap = pause(POLL_MS, signal);
      wakeNap = nap.wake;
      await nap.done;
      wakeNap = () => {};
    }
  } finally {
    signal.removeEventListener('abort', stopStream);
    stream.abort();
  }
}

/** How a followed deployment ended: the exit code, the last record read, the URL when it is ready. */
export interface Outcome {
  code: number;
  deployment: Deployment;
  url: string | null;
}

/**
 * Streams a queued deployment's build log to `out` until it is terminal and says how it ended on
 * stderr: ready (0, with the URL its environment is served at: production's or the preview's own
 * host), failed (1, with the last build log lines), superseded or cancelled (1). Ctrl-C (`signal`)
 * stops the waiting only (130). Used by `berth deploy` and `berth env set --redeploy`.
 */
export async function followDeployment(client: ApiClient, project: { id: string; slug: string }, queued: Deployment, out: NodeJS.WritableStream, signal: AbortSignal): Promise<Outcome> {
  const started = Date.now();
  let final: Deployment;
  try {
    final = await waitForDeployment(client, queued, out, signal);
  } catch (e) {
    if (!(e instanceof Interrupted)) throw e;
    note(`\nstopped waiting: deployment ${queued.id} goes on on the server (see \`berth deployments ${project.slug}\`, stop it with \`berth cancel ${queued.id}\`)`);
    return { code: 130, deployment: queued, url: null };
  }
  if (final.status === 'ready') {
    const url = await environmentUrl(client, project.id, final.environment);
    note(`deployment ${final.id} is ready (${((Date.now() - started) / 1000).toFixed(1)} s)${url ? '' : `; the server names no URL for ${final.environment}`}`);
    return { code: EXIT_OK, deployment: final, url };
  }
  if (final.status === 'failed') {
    note(`deployment ${final.id} failed: ${final.error ?? 'no reason recorded'}`);
    const tail = await answer(client.api.GET('/api/deployments/{id}/logs', { params: { path: { id: final.id }, query: { limit: TAIL_LINES } } })).catch(() => [] as LogLine[]);
    if (tail.length) {
      note(`last ${tail.length} lines of the build log:`);
      for (const l of tail) note(`  ${l.line}`);
    }
  } else if (final.status === 'superseded') {
    const by = /superseded by (\S+)/.exec(final.error ?? '')?.[1];
    note(`deployment ${final.id} was superseded${by ? ` by ${by}` : ''}: a newer deployment of ${final.environment} replaced it`);
  } else {
    note(`deployment ${final.id} was ${final.status}`);
  }
  return { code: EXIT_FAILED, deployment: final, url: null };
}

// ---------------------------------------------------------------- the command

/**
 * Packs the folder into `tmp`, uploads it, scans it and ensures the project (a new one takes the
 * detected config; an existing one keeps its own settings, the server filling the ones it leaves
 * empty from the scan); the folder is linked from then on, whatever the build does.
 */
async function uploadAndEnsure(client: ApiClient, root: string, tmp: string, target: Choice, opts: DeployOptions) {
  const list = listFiles(root);
  for (const s of list.skipped) note(`skipped ${s.path}: ${s.reason}`);
  const archive = path.join(tmp, 'source.tar.gz');
  const size = await packFiles(root, list, archive);
  note(`packed ${list.files.length} files (${human(list.bytes)}, ${human(size)} compressed)`);
  const session = await answer(
    client.api.POST('/api/projects/folder/session', { body: { sizeBytes: size, ...(target.existing ? { projectId: target.existing.id } : { name: target.name }) } }),
  );
  await uploadFile(session, archive, size);
  rmSync(tmp, { recursive: true, force: true });

  const scan = await answer(client.api.POST('/api/projects/folder/scan/{sessionId}', { params: { path: { sessionId: session.sessionId } } }));
  note(
    `detected ${scan.framework ?? scan.runtime ?? 'nothing known'}${scan.packageManager ? ` (${scan.packageManager})` : ''}` +
      `${scan.monorepo ? `, a ${scan.monorepo} workspace` : ''}; build: ${scan.buildCommand ?? '-'}; start: ${scan.startCommand ?? (scan.outputDirectory ? `static files in ${scan.outputDirectory}` : '-')}`,
  );
  const config: Record<string, unknown> = {};
  for (const k of CONFIG_KEYS) if (scan[k] !== null && scan[k] !== undefined && scan[k] !== '') config[k] = scan[k];
  const body = target.existing
    ? { projectId: target.existing.id, gitProvider: 'upload', sessionId: session.sessionId }
    : { name: target.name, ...config, gitProvider: 'upload', sessionId: session.sessionId };
  const project = await answer(client.api.POST('/api/projects/ensure', { body }));
  note(target.existing ? `updated project ${project.slug} (${project.id})` : `created project ${project.slug} (${project.id})`);
  const orgId = project.orgId ?? (await answer(client.api.GET('/api/auth/me'))).org?.id;
  if (orgId) writeLink(root, { projectId: project.id, orgId, server: client.server });
  await saveCommandFlags(client, project, opts);
  return { project, sessionId: session.sessionId };
}

export async function deploy(dir: string, opts: DeployOptions): Promise<number> {
  const root = path.resolve(dir);
  let isDir = false;
  try {
    isDir = statSync(root).isDirectory();
  } catch {
    /* missing */
  }
  if (!isDir) throw new UsageError(`${dir} is not a folder`);
  const client = savedClient();
  const out = opts.json ? process.stderr : process.stdout;

  // Ctrl-C: before the deployment exists, stop (the temporary tarball removed); while waiting, stop waiting.
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-deploy-'));
  const waiting = new AbortController();
  let deploymentId: string | null = null;
  const onSigint = () => {
    if (deploymentId) return waiting.abort();
    rmSync(tmp, { recursive: true, force: true });
    note('\ninterrupted: nothing was deployed');
    process.exit(130);
  };
  process.on('SIGINT', onSigint);
  try {
    const target = await chooseProject(client, root, opts);
    // A name the server would refuse stops here, before anything is uploaded; a missing preview
    // environment is created once the project exists (after the ensure).
    if (opts.env !== 'production') checkEnvironmentName(opts.env);

    // Pack, upload, scan and ensure the project.
    const { project, sessionId } = await uploadAndEnsure(client, root, tmp, target, opts);
    if (opts.env !== 'production') await ensureEnvironment(client, project.id, opts.env);

    // Deploy.
    // The session again, as the seed's flow does: the ensure already made it the source (a no-op for
    // the upload, contract section 12), and the deployment is recorded as triggered by an upload.
    const queued = await answer(client.api.POST('/api/deployments', { body: { projectId: project.id, environment: opts.env, sessionId, ...(opts.cache === false ? { noCache: true } : {}) } }));
    deploymentId = queued.id;
    if (!opts.wait) {
      if (opts.json) printJson({ project, deployment: queued, url: null });
      else {
        process.stdout.write(`deployment ${queued.id} ${queued.status}\n`);
        note(`it goes on without waiting: follow it with \`berth deployments ${project.slug}\``);
      }
      return EXIT_OK;
    }
    note(`deployment ${queued.id} ${queued.status} (${queued.environment}): streaming the build log`);
    const outcome = await followDeployment(client, project, queued, out, waiting.signal);
    if (opts.json) printJson({ project, deployment: outcome.deployment, url: outcome.url });
    else if (outcome.url) process.stdout.write(`${outcome.url}\n`);
    return outcome.code;
  } finally {
    process.off('SIGINT', onSigint);
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function registerDeployCommand(program: Command): void {
  program
    .command('deploy [dir]')
    .description('deploy a folder: pack it (honouring .gitignore and .berthignore), upload, build, wait until it serves and print the URL')
    .option('--project <project>', 'deploy to this project (id, slug or name) instead of the folder\'s linked one')
    .option('--name <name>', 'name of the project to create when the folder is not linked (default: the folder name)')
    .option('--env <name>', 'environment to deploy (one the project lacks is created as a preview environment)', 'production')
    .option('--no-wait', 'return once the deployment is queued')
    .option('--json', 'print { project, deployment, url } on stdout (progress on stderr)')
    .option('--no-cache', "build without the project's build cache (nothing restored, nothing saved)")
    .option('--install-command <command>', 'install with this command, saved to the project\'s config (empty: the detected one)')
    .option('--build-command <command>', 'build with this command, saved to the project\'s config (empty: the detected one)')
    .option('--start-command <command>', 'start with this command, saved to the project\'s config (empty: the detected one)')
    .action(
      action(async (dir: string | undefined, opts: DeployOptions) => {
        const code = await deploy(dir ?? '.', opts);
        // Open sockets (keep-alive) must not hold the process: the outcome is known.
        process.exit(code);
      }),
    );
}
