/**
 * A running managed service's data as one artifact (backups, docs/services.md "Backups"): PostgreSQL
 * `pg_dump -Fc`, MariaDB `mariadb-dump --single-transaction` (mysqldump), Redis `BGSAVE` then its RDB
 * file, MongoDB `mongodump --archive --gzip` (docker runtime only). The dump programs run on the host
 * as the server's user and reach the service over its project network (the sandbox network admits the
 * server's uid: docs/decisions.md "Managed service dumps"); under the docker runtime they run inside
 * the service's container instead (`docker exec`: its image has them, in its server's version). The
 * service's own credentials go in their environment (MongoDB's tools: a `--config` file,
 * mongo-tools.ts), never in an argument. Argument arrays only; what the programs print goes to the
 * server log, never to a record.
 */
import { spawn } from 'node:child_process';
import { argvAt } from '../../runtime/netns-join.js';
import { constants, createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import type { AppContext } from '../../context.js';
import { openCredentials, type Credentials } from './credentials.js';
import { programOf } from './engines.js';
import { mongodumpArgs, writeToolsConfig } from './mongo-tools.js';
import type { ServiceKind } from './kinds.js';
import type { ManagedServiceRow } from './services.store.js';

/** A dump program's failure in Berth's words; `detail` (its stderr's tail, password redacted) is for the server log only. */
export class DumpToolError extends Error {
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
    this.name = 'DumpToolError';
  }
}

const BASE_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function dumpBinaries(env: NodeJS.ProcessEnv = process.env) {
  return {
    mariadbDump: env.BERTH_MARIADB_DUMP_BIN ?? '/usr/bin/mariadb-dump',
    redisCli: env.BERTH_REDIS_CLI_BIN ?? '/usr/bin/redis-cli',
  };
}

/** The artifact's name ending per kind. */
export function dumpExtension(kind: string): string {
  return kind === 'postgres' ? '.dump' : kind === 'mysql' ? '.sql' : kind === 'redis' ? '.rdb' : '.archive';
}

/** A dump program running: on the host (inside the service's namespace), or inside the service's container. */
interface ToolRun {
  stdout: Readable;
  stderr: Readable;
  done: Promise<{ code: number | null; signal: string | null; error?: Error }>;
  kill(): void;
}

/** Where a service's client programs run: `inImage` (docker runtime) in its own container, else on the host. */
interface ToolPlace {
  inImage: boolean;
  /** The address the program connects to. */
  host: string;
  port: number;
  run(program: string, args: string[], env: Record<string, string>, signal?: AbortSignal): ToolRun;
}

/** On the host, inside the network namespace of the service's box (`at`: its address): the host itself cannot reach it. */
function onHost(at: string, port: number): ToolPlace {
  return {
    inImage: false,
    host: at,
    port,
    run(program, args, env, signal) {
      const { bin, args: argv } = argvAt(at, program, args);
      const child = spawn(bin, argv, { env: { ...BASE_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'], signal });
      const done = new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
        child.on('error', (e) => resolve({ code: null, signal: null, error: e }));
        child.on('close', (code, sig) => resolve({ code, signal: sig }));
      });
      return { stdout: child.stdout, stderr: child.stderr, done, kill: () => child.exitCode === null && child.kill('SIGKILL') };
    },
  };
}

/** Inside the service's own container (docker runtime), by `docker exec` with an argument array: it listens on its loopback too. */
function inContainer(ctx: AppContext, row: ManagedServiceRow): ToolPlace {
  return {
    inImage: true,
    host: '127.0.0.1',
    port: row.port,
    run(program, args, env, signal) {
      const p = ctx.state.services.runner?.inService(row.id, [program, ...args], env);
      if (!p) throw new Error(`the service ${row.name} is not running on this server: start it to back it up`);
      const kill = () => {
        if (p.pid) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      };
      signal?.addEventListener('abort', kill, { once: true });
      return { stdout: p.stdout!, stderr: p.stderr!, done: p.exited, kill };
    },
  };
}

/** A program's standard output as a stream that errors (in Berth's words) when the program fails. */
function toolStream(tool: string, place: ToolPlace, program: string, programArgs: string[], env: Record<string, string>, secret: string, signal?: AbortSignal): Readable {
  const child = place.run(program, programArgs, env, signal);
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-4000)));
  child.stdout.pipe(out, { end: false });
  let finished = false;
  void child.done.then((res) => {
    finished = true;
    if (res.error) out.destroy(new Error(`${tool} could not run: ${res.error.message}`));
    else if (res.code === 0) out.end();
    else out.destroy(new DumpToolError(`${tool} failed (exit ${res.code ?? res.signal}); the server log has its output`, stderr.split(secret).join('[redacted]')));
  });
  out.on('close', () => {
    if (!finished) child.kill();
  });
  return out;
}

function redisCli(place: ToolPlace, c: Credentials, args: string[]): Promise<string> {
  const program = place.inImage ? 'redis-cli' : dumpBinaries().redisCli;
  const child = place.run(program, ['--no-auth-warning', '-h', place.host, '-p', String(place.port), ...args], { REDISCLI_AUTH: c.password });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-2000)));
  const timer = setTimeout(() => child.kill(), 30_000);
  return child.done.then((res) => {
    clearTimeout(timer);
    if (res.code !== 0) throw new DumpToolError('redis-cli could not reach the service', `${res.error?.message ?? ''} ${stderr}`.split(c.password).join('[redacted]'));
    return stdout;
  });
}

/** `INFO persistence` as fields. */
async function persistence(place: ToolPlace, c: Credentials): Promise<Record<string, string>> {
  const text = await redisCli(place, c, ['info', 'persistence']);
  return Object.fromEntries(text.split(/\r?\n/).filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
}

/**
 * Redis: a BGSAVE of our own (scheduled after a rewrite in progress, waited out when another save
 * runs), then the RDB file it wrote, opened without following links (the folder is the service's).
 */
async function redisSource(row: ManagedServiceRow, dataDir: string, place: ToolPlace, c: Credentials, signal?: AbortSignal): Promise<Readable> {
  const deadline = Date.now() + 30 * 60_000;
  const before = Number((await persistence(place, c)).rdb_saves ?? NaN);
  if (!Number.isFinite(before)) throw new Error('this Redis does not report its saves (rdb_saves): Redis 7 or newer is needed');
  for (;;) {
    const answer = (await redisCli(place, c, ['bgsave', 'schedule'])).trim();
    if (/started|scheduled/i.test(answer)) break;
    if (!/already in progress/i.test(answer)) throw new DumpToolError('Redis refused the BGSAVE; the server log has its answer', answer.slice(0, 500));
    await sleep(200);
    if (Date.now() > deadline || signal?.aborted) throw new Error('Redis kept saving: no BGSAVE of Berth\'s own could start');
  }
  for (let i = 0; ; i++) {
    if (signal?.aborted) throw new Error('cancelled');
    if (Date.now() > deadline) throw new Error('the BGSAVE did not end within 30 minutes');
    const p = await persistence(place, c);
    if (p.rdb_bgsave_in_progress === '0' && Number(p.rdb_saves) > before) {
      if (p.rdb_last_bgsave_status !== 'ok') throw new Error('Redis could not write its RDB file (BGSAVE failed; see the service\'s log)');
      break;
    }
    await sleep(Math.min(1000, 50 * (i + 1)));
  }
  const fh = await open(path.join(dataDir, 'dump.rdb'), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    throw new Error(`the RDB file of ${row.name} is not a regular file`);
  }
  return createReadStream('', { fd: fh, autoClose: true, highWaterMark: 1024 * 1024, signal });
}

/**
 * MongoDB (docker runtime only): `mongodump --archive --gzip` inside the service's container, its
 * password in a `--config` file of the service's `/app` (mongo-tools.ts), removed once the dump ended.
 */
async function mongoSource(ctx: AppContext, row: ManagedServiceRow, place: ToolPlace, c: Credentials, signal?: AbortSignal): Promise<Readable> {
  const runner = ctx.state.services.runner;
  if (!place.inImage || !runner) throw new Error('MongoDB runs only under the docker runtime: its dump runs inside its container');
  const config = await writeToolsConfig(path.join(runner.volumeDir(row), 'conf'), c);
  try {
    const out = toolStream('mongodump', place, 'mongodump', mongodumpArgs({ configPath: config.inside, port: place.port, username: c.username }), {}, c.password, signal);
    out.once('close', () => void config.remove().catch(() => {}));
    return out;
  } catch (e) {
    await config.remove();
    throw e;
  }
}

/**
 * The native dump of a running managed service, as a stream. `dataDir` is the service's data folder
 * (Redis's RDB file is read from it); `address` where the server reaches it now. Under the docker
 * runtime the dump programs run inside the service's container (its image has them, in the server's
 * version); elsewhere the host's, inside the service's network namespace.
 */
export async function nativeDump(ctx: AppContext, row: ManagedServiceRow, address: { host: string; port: number }, dataDir: string, signal?: AbortSignal): Promise<Readable> {
  const c = openCredentials(ctx.keyring, row.id, row.credentials);
  const place = ctx.config.runtime === 'docker' ? inContainer(ctx, row) : onHost(address.host, address.port);
  const { host, port } = place;
  switch (row.kind as ServiceKind) {
    case 'postgres': {
      const bin = programOf('postgres', row.version, 'pg_dump', place.inImage);
      const env = { PGHOST: host, PGPORT: String(port), PGUSER: c.username, PGPASSWORD: c.password, PGDATABASE: c.database, PGCONNECT_TIMEOUT: '10', PGSSLMODE: 'disable' };
      return toolStream('pg_dump', place, bin, ['--format=custom', '--no-password'], env, c.password, signal);
    }
    case 'mysql': {
      const args = ['--no-defaults', '--protocol=TCP', `--host=${host}`, `--port=${port}`, `--user=${c.username}`, '--single-transaction', '--quick', '--routines', '--triggers', '--no-tablespaces', '--hex-blob', '--', c.database];
      return toolStream('mysqldump', place, place.inImage ? 'mariadb-dump' : dumpBinaries().mariadbDump, args, { MYSQL_PWD: c.password }, c.password, signal);
    }
    case 'redis':
      return redisSource(row, dataDir, place, c, signal);
    case 'mongodb':
      return mongoSource(ctx, row, place, c, signal);
  }
}
