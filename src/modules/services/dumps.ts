/**
 * A running managed service's data as one artifact (backups, docs/services.md "Backups"): PostgreSQL
 * `pg_dump -Fc`, MariaDB `mariadb-dump --single-transaction` (mysqldump), Redis `BGSAVE` then its RDB
 * file. The dump programs run on the host as the server's user and reach the service over its
 * project network (the sandbox network admits the server's uid: docs/decisions.md "Managed service
 * dumps"), with the service's own credentials in their environment, never in an argument. Argument
 * arrays only; what the programs print goes to the server log, never to a record.
 */
import { execFile, spawn } from 'node:child_process';
import { argvAt } from '../../runtime/netns-join.js';
import { constants, createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import type { AppContext } from '../../context.js';
import { openCredentials, type Credentials } from './credentials.js';
import { hostBinaries, type ServiceKind } from './kinds.js';
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

/** A program's standard output as a stream that errors (in Berth's words) when the program fails. */
function toolStream(tool: string, at: string, program: string, programArgs: string[], env: Record<string, string>, secret: string, signal?: AbortSignal): Readable {
  // Inside the service's network namespace (`at`: its address): the host itself cannot reach it.
  const { bin, args } = argvAt(at, program, programArgs);
  const child = spawn(bin, args, { env: { ...BASE_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'], signal });
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-4000)));
  child.stdout.pipe(out, { end: false });
  child.on('error', (e) => out.destroy(new Error(`${tool} could not run: ${e.message}`)));
  child.on('close', (code, sig) => {
    if (code === 0) out.end();
    else out.destroy(new DumpToolError(`${tool} failed (exit ${code ?? sig}); the server log has its output`, stderr.split(secret).join('[redacted]')));
  });
  out.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return out;
}

function redisCli(host: string, port: number, c: Credentials, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const at = argvAt(host, dumpBinaries().redisCli, ['--no-auth-warning', '-h', host, '-p', String(port), ...args]);
    execFile(at.bin, at.args, { env: { ...BASE_ENV, REDISCLI_AUTH: c.password }, timeout: 30_000 }, (err, stdout) => {
      if (err) reject(new DumpToolError('redis-cli could not reach the service', String(err.message).split(c.password).join('[redacted]')));
      else resolve(String(stdout));
    });
  });
}

/** `INFO persistence` as fields. */
async function persistence(host: string, port: number, c: Credentials): Promise<Record<string, string>> {
  const text = await redisCli(host, port, c, ['info', 'persistence']);
  return Object.fromEntries(text.split(/\r?\n/).filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
}

/**
 * Redis: a BGSAVE of our own (scheduled after a rewrite in progress, waited out when another save
 * runs), then the RDB file it wrote, opened without following links (the folder is the service's).
 */
async function redisSource(row: ManagedServiceRow, dataDir: string, host: string, port: number, c: Credentials, signal?: AbortSignal): Promise<Readable> {
  const deadline = Date.now() + 30 * 60_000;
  const before = Number((await persistence(host, port, c)).rdb_saves ?? NaN);
  if (!Number.isFinite(before)) throw new Error('this Redis does not report its saves (rdb_saves): Redis 7 or newer is needed');
  for (;;) {
    const answer = (await redisCli(host, port, c, ['bgsave', 'schedule'])).trim();
    if (/started|scheduled/i.test(answer)) break;
    if (!/already in progress/i.test(answer)) throw new DumpToolError('Redis refused the BGSAVE; the server log has its answer', answer.slice(0, 500));
    await sleep(200);
    if (Date.now() > deadline || signal?.aborted) throw new Error('Redis kept saving: no BGSAVE of Berth\'s own could start');
  }
  for (let i = 0; ; i++) {
    if (signal?.aborted) throw new Error('cancelled');
    if (Date.now() > deadline) throw new Error('the BGSAVE did not end within 30 minutes');
    const p = await persistence(host, port, c);
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
 * The native dump of a running managed service, as a stream. `dataDir` is the service's data folder
 * (Redis's RDB file is read from it); `address` where the server reaches it now.
 */
export async function nativeDump(ctx: AppContext, row: ManagedServiceRow, address: { host: string; port: number }, dataDir: string, signal?: AbortSignal): Promise<Readable> {
  const c = openCredentials(ctx.keyring, row.id, row.credentials);
  const { host, port } = address;
  switch (row.kind as ServiceKind) {
    case 'postgres': {
      const bin = path.join(hostBinaries().postgresRoot, path.basename(row.version), 'bin', 'pg_dump');
      const env = { PGHOST: host, PGPORT: String(port), PGUSER: c.username, PGPASSWORD: c.password, PGDATABASE: c.database, PGCONNECT_TIMEOUT: '10', PGSSLMODE: 'disable' };
      return toolStream('pg_dump', host, bin, ['--format=custom', '--no-password'], env, c.password, signal);
    }
    case 'mysql': {
      const args = ['--no-defaults', '--protocol=TCP', `--host=${host}`, `--port=${port}`, `--user=${c.username}`, '--single-transaction', '--quick', '--routines', '--triggers', '--no-tablespaces', '--hex-blob', '--', c.database];
      return toolStream('mysqldump', host, dumpBinaries().mariadbDump, args, { MYSQL_PWD: c.password }, c.password, signal);
    }
    case 'redis':
      return redisSource(row, dataDir, host, port, c, signal);
    case 'mongodb':
      throw new Error('MongoDB runs only under the docker runtime, which does not run managed services yet');
  }
}
