import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { PgToolError } from './failures.js';

/**
 * A PostgreSQL service's data as one artifact and back: `pg_dump -Fc` as a stream, `pg_restore` of a
 * dump file. No shell: programs are spawned with argument arrays, connection details passed in PG*
 * environment variables (the password never appears in an argument list).
 */

let pgBinDir: string | null | undefined;

/** The folder of the newest installed PostgreSQL client tools, or null to use PATH. */
function findPgBinDir(): string | null {
  if (pgBinDir !== undefined) return pgBinDir;
  pgBinDir = null;
  if (process.env.BERTH_PG_BIN_DIR) return (pgBinDir = process.env.BERTH_PG_BIN_DIR);
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v) && existsSync(`/usr/lib/postgresql/${v}/bin/pg_dump`))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) pgBinDir = `/usr/lib/postgresql/${versions[0]}/bin`;
  } catch {
    /* not a Debian layout */
  }
  return pgBinDir;
}

export function pgBin(name: 'pg_dump' | 'pg_restore'): string {
  const dir = findPgBinDir();
  return dir ? path.join(dir, name) : name;
}

/**
 * libpq environment for a postgres:// URL (the password never appears in an argument list).
 * `hostaddr`, the address the outbound check resolved and accepted, pins the connection to it
 * (`PGHOSTADDR`; the host name still serves TLS verification), so a DNS answer that changes after
 * the check cannot move pg_dump elsewhere. A `host` parameter is never honoured.
 */
export function pgEnv(connectionUrl: string, hostaddr?: string): { env: Record<string, string>; dbname: string } {
  const u = new URL(connectionUrl);
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('connection URL must start with postgres://');
  const env: Record<string, string> = {};
  if (u.hostname) env.PGHOST = decodeURIComponent(u.hostname.replace(/^\[|\]$/g, ''));
  if (hostaddr) env.PGHOSTADDR = hostaddr;
  if (u.port) env.PGPORT = u.port;
  if (u.username) env.PGUSER = decodeURIComponent(u.username);
  if (u.password) env.PGPASSWORD = decodeURIComponent(u.password);
  const params = u.searchParams;
  if (params.get('sslmode')) env.PGSSLMODE = params.get('sslmode')!;
  const dbname = decodeURIComponent(u.pathname.replace(/^\//, '')) || env.PGUSER || 'postgres';
  env.PGDATABASE = dbname;
  env.PGCONNECT_TIMEOUT = '10';
  return { env, dbname };
}

/**
 * pg_dump/pg_restore's failure in Berth's words. The tool's stderr carries the database server's
 * own messages (and tells a refused port from a silent one): it goes to the server log only.
 */
export function pgFailure(tool: 'pg_dump' | 'pg_restore', exit: number | string | null, stderr: string): PgToolError {
  const text = stderr.trim();
  let words: string;
  if (/password authentication failed|authentication failed|no pg_hba\.conf entry|role "[^"]*" does not exist|password must be supplied|no password supplied/i.test(text)) {
    words = 'the database refused the credentials';
  } else if (/database "[^"]*" does not exist/i.test(text)) {
    words = 'the database named in the connection URL does not exist';
  } else if (/could not connect|connection to server|could not translate host name|timeout expired|server closed the connection|Connection refused|No route to host|Network is unreachable|SSL/i.test(text)) {
    words = 'could not connect to the database';
  } else {
    words = `${tool} failed (exit ${exit ?? 'unknown'}); the server log has its output`;
  }
  return new PgToolError(words, text.slice(-4000));
}

function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'HOME'];
  const out: Record<string, string> = {};
  for (const k of keep) if (process.env[k]) out[k] = process.env[k]!;
  return out;
}

/**
 * `pg_dump -Fc` of the database, as a stream. The stream errors when pg_dump exits non-zero
 * (with the end of its stderr as the message).
 */
export function pgDumpSource(connectionUrl: string, signal?: AbortSignal, hostaddr?: string): Readable {
  const { env } = pgEnv(connectionUrl, hostaddr);
  const child = spawn(pgBin('pg_dump'), ['--format=custom', '--no-password'], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    signal,
  });
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  let stdoutDone = false;
  let exit: { code: number | null; sig: NodeJS.Signals | null } | null = null;
  const settle = () => {
    if (!stdoutDone || !exit) return;
    if (exit.code === 0) out.end();
    else out.destroy(pgFailure('pg_dump', exit.code ?? exit.sig, stderr));
  };
  child.stdout.on('data', (d: Buffer) => {
    if (!out.write(d)) {
      child.stdout.pause();
      out.once('drain', () => child.stdout.resume());
    }
  });
  child.stdout.on('end', () => {
    stdoutDone = true;
    settle();
  });
  child.on('error', (e) => out.destroy(new Error(`pg_dump could not run: ${e.message}`)));
  child.on('close', (code, sig) => {
    exit = { code, sig };
    stdoutDone = true;
    settle();
  });
  out.on('close', () => {
    if (!exit) child.kill('SIGKILL');
  });
  return out;
}

/**
 * `pg_restore --single-transaction --no-acl` of a local dump file into the attached database only
 * (objects of the dump are dropped and recreated inside the one transaction, so a failure leaves
 * the database as it was).
 */
export function pgRestoreFile(connectionUrl: string, file: string, signal?: AbortSignal, hostaddr?: string): Promise<void> {
  const { env, dbname } = pgEnv(connectionUrl, hostaddr);
  return new Promise((resolve, reject) => {
    const child = spawn(
      pgBin('pg_restore'),
      ['--single-transaction', '--no-acl', '--no-owner', '--clean', '--if-exists', '--exit-on-error', '--no-password', `--dbname=${dbname}`, file],
      { env: { ...baseEnv(), ...env }, stdio: ['ignore', 'ignore', 'pipe'], signal },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    child.on('error', (e) => reject(new Error(`pg_restore could not run: ${e.message}`)));
    child.on('close', (code, sig) => {
      if (code === 0) resolve();
      else reject(pgFailure('pg_restore', code ?? sig, stderr));
    });
  });
}
