/**
 * Restoring a managed service from a native dump (backups, docs/services.md "Backups"): a fresh
 * instance of the same kind and version is made beside the service's data (`restore-<key>`), the
 * artifact is loaded into it by the kind's own client inside its box (the project's uid), and it must
 * answer and hold as many tables (keys; MongoDB: documents) as the artifact; only then is it swapped
 * in for the data of the service, whose old data is kept until the service answered on the new one.
 */
import { createReadStream, existsSync } from 'node:fs';
import { chown, copyFile, mkdir, rename, rm, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { timed } from '../../lib/spans.js';
import { syncFilesystemOf } from '../../lib/sync-fs.js';
import { openCredentials, type Credentials } from './credentials.js';
import type { EnginePlan } from './engines.js';
import { COUNT_LINE, countScript, mongorestoreArgs, restoreSummary, toolsConfigText } from './mongo-tools.js';
import type { ServiceKind } from './kinds.js';
import type { ScratchInstance } from './scratch.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The artifact's name inside the fresh instance's data folder (`/data/<name>` in its box). */
const ARTIFACT: Record<string, string> = { postgres: 'berth-restore.dump', mysql: 'berth-restore.sql', redis: 'dump.rdb', mongodb: 'berth-restore.archive' };

function runnerOf(ctx: AppContext) {
  const runner = ctx.state.services.runner;
  if (!runner) throw new Error(`the ${ctx.config.runtime} runtime does not run managed services`);
  return runner;
}

/** Folders of a restore keyed `key` (a restore's or a run's id) of the service. */
export function restorePaths(ctx: AppContext, row: Pick<ManagedServiceRow, 'projectId' | 'id'>, key: string) {
  const base = runnerOf(ctx).volumeDir(row);
  const k = path.basename(key);
  return { base, data: path.join(base, 'data'), staging: path.join(base, `restore-${k}`), old: path.join(base, `data.old-${k}`), failed: path.join(base, `data.failed-${k}`) };
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}

async function countLines(file: string, re: RegExp): Promise<number> {
  let n = 0;
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) if (re.test(line)) n++;
  return n;
}

function fail(what: string, out: string): Error {
  const e = new Error(what) as Error & { detail?: string };
  e.detail = out;
  return e;
}

async function loadPostgres(i: ScratchInstance): Promise<void> {
  const bin = (p: string) => i.program(p);
  const env = i.plan.ready.env;
  const file = `/data/${ARTIFACT.postgres}`;
  const listed = await i.exec({ argv: [bin('pg_restore'), '--list', file], env }, /^\d+; \d+ \d+ TABLE (?!DATA )/);
  if (!listed.ok) throw fail('the artifact is not a PostgreSQL custom-format dump (pg_restore --list failed)', listed.out);
  const conn = ['-h', '/data/run', '-p', String(i.port), '-U', i.credentials.username, '-d', i.credentials.database];
  const loaded = await i.exec({ argv: [bin('pg_restore'), ...conn, '--single-transaction', '--exit-on-error', '--no-owner', '--no-acl', '--no-password', file], env });
  if (!loaded.ok) throw fail('pg_restore into the fresh instance failed; the server log has its output', loaded.out);
  const q = "select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'";
  const counted = await i.exec({ argv: [bin('psql'), '-X', '-A', '-t', ...conn, '-c', q], env });
  const tables = Number(counted.out.trim().split('\n').pop());
  if (!counted.ok || tables !== listed.matched) throw fail(`the fresh instance holds ${counted.ok ? tables : 'no readable'} tables where the artifact has ${listed.matched}`, counted.out);
}

async function loadMariadb(i: ScratchInstance, artifact: string): Promise<void> {
  const expected = await countLines(artifact, /^CREATE TABLE /);
  const conn = ['--no-defaults', '--protocol=TCP', '-h', '127.0.0.1', '-P', String(i.port), '-u', i.credentials.username, '-D', i.credentials.database];
  const env = { MYSQL_PWD: i.credentials.password };
  const loaded = await i.exec({ argv: [i.program('mariadb'), ...conn, '--batch', '-e', `source /data/${ARTIFACT.mysql}`], env });
  if (!loaded.ok) throw fail('loading the dump into the fresh MariaDB failed; the server log has its output', loaded.out);
  const q = "select count(*) from information_schema.tables where table_schema = database() and table_type = 'BASE TABLE'";
  const counted = await i.exec({ argv: [i.program('mariadb'), ...conn, '-N', '-e', q], env });
  const tables = Number(counted.out.trim().split('\n').pop());
  if (!counted.ok || tables !== expected) throw fail(`the fresh instance holds ${counted.ok ? tables : 'no readable'} tables where the artifact has ${expected}`, counted.out);
}

async function redisInfo(i: ScratchInstance, section: string): Promise<Record<string, string>> {
  const res = await i.exec({ argv: [i.program('redis-cli'), '--no-auth-warning', '-h', '127.0.0.1', '-p', String(i.port), 'info', section], env: { REDISCLI_AUTH: i.credentials.password } });
  if (!res.ok) throw fail('the fresh Redis did not answer INFO', res.out);
  return Object.fromEntries(res.out.split('\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
}

/** Redis loaded the RDB at start (append-only off); its keys are checked, then the append-only file is written from memory. */
async function loadRedis(i: ScratchInstance): Promise<void> {
  const checked = await i.exec({ argv: [i.program('redis-check-rdb'), `/data/${ARTIFACT.redis}`] });
  const read = /(\d+) keys read/.exec(checked.out);
  const withTtl = Number(/(\d+) expires/.exec(checked.out)?.[1] ?? 0);
  if (!checked.ok || !read) throw fail('the artifact is not a Redis RDB file (redis-check-rdb failed)', checked.out);
  const keyspace = await redisInfo(i, 'keyspace');
  const keys = Object.values(keyspace).reduce((n, v) => n + Number(/keys=(\d+)/.exec(v)?.[1] ?? 0), 0);
  const expected = Number(read[1]);
  if (keys > expected || keys < expected - withTtl) throw fail(`the fresh instance holds ${keys} keys where the artifact has ${expected}`, checked.out);
  const on = await i.exec({ argv: [i.program('redis-cli'), '--no-auth-warning', '-h', '127.0.0.1', '-p', String(i.port), 'config', 'set', 'appendonly', 'yes'], env: { REDISCLI_AUTH: i.credentials.password }, expect: /OK/ });
  if (!on.ok) throw fail('the fresh Redis could not start its append-only file', on.out);
  for (let n = 0; ; n++) {
    const p = await redisInfo(i, 'persistence');
    if (p.aof_enabled === '1' && p.aof_rewrite_in_progress === '0' && p.aof_rewrite_scheduled === '0') {
      if (p.aof_last_bgrewrite_status !== 'ok') throw fail('the fresh Redis could not write its append-only file', JSON.stringify(p));
      return;
    }
    if (n > 1200) throw new Error('the fresh Redis did not finish its append-only file within 10 minutes');
    await sleep(Math.min(500, 50 * (n + 1)));
  }
}

/**
 * MongoDB: `mongorestore` of the archive (its password in the `--config` file the plan gained), which
 * must report no failed document; then the fresh instance must hold as many documents as it restored.
 */
async function loadMongo(i: ScratchInstance): Promise<void> {
  const argv = ['mongorestore', ...mongorestoreArgs({ configPath: `/app/${MONGO_CONFIG}`, port: i.port, username: i.credentials.username, archive: `/data/${ARTIFACT.mongodb}` })];
  const loaded = await i.exec({ argv });
  const summary = restoreSummary(loaded.out);
  if (!loaded.ok || !summary) throw fail('mongorestore into the fresh instance failed; the server log has its output', loaded.out);
  if (summary.failed > 0) throw fail(`${summary.failed} documents of the artifact could not be restored`, loaded.out);
  const counted = await i.exec({ argv: ['mongosh', '--quiet', '--norc', '--host', '127.0.0.1', '--port', String(i.port), '--file', `/app/${MONGO_COUNT}`] });
  const documents = Number(COUNT_LINE.exec(counted.out)?.[1] ?? NaN);
  if (!counted.ok || documents !== summary.restored) throw fail(`the fresh instance holds ${counted.ok && Number.isFinite(documents) ? documents : 'no readable'} documents where the artifact has ${summary.restored}`, counted.out);
}

/** The throwaway instance's files for MongoDB's restore (removed with its configuration folder when it closes). */
const MONGO_CONFIG = 'berth-mongo-tools.yaml';
const MONGO_COUNT = 'berth-count.js';

/**
 * PostgreSQL loads the artifact as PostgreSQL's "Populating a Database" advises for a bulk load: no
 * fsync, no full-page writes, `wal_level=minimal` (the tables `pg_restore --single-transaction`
 * creates are filled without WAL), no autovacuum, more memory for the index builds. None of it
 * outlives the load: the instance is shut down cleanly, its folder flushed to disk in one call
 * (`syncFilesystemOf`) before the swap, and the service starts on it with its own settings. A crash
 * before the flush leaves only the staging folder, which the restore's repair removes.
 */
function bulkLoadPostgres(plan: EnginePlan, memoryMb: number): EnginePlan {
  const maintenanceMb = Math.max(64, Math.floor(memoryMb / 4));
  const settings = ['fsync=off', 'full_page_writes=off', 'synchronous_commit=off', 'wal_level=minimal', 'max_wal_senders=0', 'autovacuum=off', `maintenance_work_mem=${maintenanceMb}MB`];
  return { ...plan, server: { ...plan.server, argv: [...plan.server.argv, ...settings.flatMap((s) => ['-c', s])] } };
}

/**
 * How a fresh instance for a restore differs from the service's own start, by kind. Redis starts
 * without its append-only file, so that it loads the RDB (with one enabled it would start empty).
 * MongoDB's instance gains the tools' `--config` file and the count script (mongo-tools.ts).
 */
function adaptFor(kind: string, c: Credentials, memoryMb: number): ((plan: EnginePlan) => EnginePlan) | undefined {
  if (kind === 'mongodb') return (plan) => ({ ...plan, files: { ...plan.files, [MONGO_CONFIG]: toolsConfigText(c), [MONGO_COUNT]: countScript(c) } });
  if (kind === 'redis') return (plan) => ({ ...plan, files: { ...plan.files, 'redis.conf': plan.files['redis.conf']!.replace(/^appendonly yes$/m, 'appendonly no') } });
  if (kind === 'postgres') return (plan) => bulkLoadPostgres(plan, memoryMb);
  return undefined;
}

/**
 * Makes `staging` a fresh instance's data folder holding the artifact's data, checked: it answered,
 * and holds the artifact's tables (keys). `artifact` is a host file (verified by the caller), or a
 * function that fetches and verifies it: then a kind that loads its data with a client (PostgreSQL,
 * MariaDB, MongoDB) starts its fresh instance meanwhile (initdb and the server's start, seconds, no
 * longer wait for the download); Redis, which loads its RDB as it starts, waits for the file. The
 * artifact is moved into the folder. Throws (removing `staging`) otherwise. The service itself is
 * not touched.
 */
export async function prepareFresh(ctx: AppContext, row: ManagedServiceRow, artifact: string | (() => Promise<string>), staging: string, name: string): Promise<void> {
  const kind = row.kind as ServiceKind;
  if (!ARTIFACT[kind]) throw new Error(`${kind} services cannot be restored here`);
  await rm(staging, { recursive: true, force: true });
  await rm(`${staging}.conf`, { recursive: true, force: true });
  const fetch = typeof artifact === 'string' ? () => Promise.resolve(artifact) : artifact;
  const inside = path.join(staging, ARTIFACT[kind]!);
  const open = () => timed('restore.fresh-instance', () => runnerOf(ctx).scratch(row, staging, name, adaptFor(kind, openCredentials(ctx.keyring, row.id, row.credentials), row.memoryMb)));
  let instance: ScratchInstance | null = null;
  try {
    await mkdir(staging, { recursive: true, mode: 0o700 });
    if (kind === 'redis') {
      await timed('restore.move-artifact', async () => moveFile(await fetch(), inside));
      instance = await open();
    } else {
      const [opened, file] = await Promise.allSettled([open(), fetch()]);
      if (opened.status === 'fulfilled') instance = opened.value;
      if (file.status === 'rejected') throw file.reason;
      if (opened.status === 'rejected') throw opened.reason;
      await timed('restore.move-artifact', () => moveFile(file.value, inside));
      // The instance made its folder its box's own (scratch.ts): the artifact, moved in after, too.
      const owner = await stat(staging);
      const st = await stat(inside);
      if (st.uid !== owner.uid || st.gid !== owner.gid) await chown(inside, owner.uid, owner.gid);
    }
    const ready = instance!;
    try {
      await timed('restore.load', async () => {
        if (kind === 'postgres') await loadPostgres(ready);
        else if (kind === 'mysql') await loadMariadb(ready, inside);
        else if (kind === 'mongodb') await loadMongo(ready);
        else await loadRedis(ready);
      });
    } finally {
      instance = null;
      await timed('restore.fresh-close', () => ready.close());
    }
    await timed('restore.sync', () => syncFilesystemOf(staging));
    if (kind !== 'redis') await rm(inside, { force: true });
    await rm(path.join(staging, 'run'), { recursive: true, force: true });
  } catch (e) {
    if (instance) await (instance as ScratchInstance).close().catch(() => {});
    await rm(staging, { recursive: true, force: true }).catch(() => {});
    const detail = (e as { detail?: string }).detail;
    if (detail) ctx.log.warn({ serviceId: row.id, detail }, 'a fresh instance could not be made from a backup');
    throw e;
  }
}

/** Waits until the service answers again (`running`), or throws once it failed or the time is up. */
async function whenRunning(ctx: AppContext, row: ManagedServiceRow, timeoutMs: number): Promise<void> {
  const runner = runnerOf(ctx);
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline; i++) {
    if (runner.address(row.id)) return;
    const now = await store.findManaged(ctx.db, row.orgId, row.projectId, row.id);
    if (!now) throw new Error('the service was deleted during the restore');
    if (now.status === 'failed') throw new Error('the service did not start on the restored data');
    await sleep(i < 50 ? 100 : 1000);
  }
  throw new Error(`the service did not answer on the restored data within ${timeoutMs / 1000} s`);
}

/**
 * Swaps a prepared data folder in: the service stops, its data moves to `data.old-<key>`, the fresh
 * data takes its place and the service starts again (when it should run) and must answer; otherwise
 * the old data goes back. Answers the old data's folder (the caller removes it once the restore is
 * recorded as succeeded).
 */
export async function swapFresh(ctx: AppContext, row: ManagedServiceRow, key: string, timeoutMs = 120_000): Promise<string> {
  const runner = runnerOf(ctx);
  const p = restorePaths(ctx, row, key);
  await stat(p.staging);
  await timed('restore.swap-stop', () => runner.stop(row.id));
  const hadData = existsSync(p.data);
  if (hadData) await rename(p.data, p.old);
  await rename(p.staging, p.data);
  const current = (await store.findManaged(ctx.db, row.orgId, row.projectId, row.id)) ?? row;
  if (current.desired !== 'running') return p.old;
  try {
    runner.ensure({ ...current, status: 'starting' });
    await timed('restore.swap-start', () => whenRunning(ctx, current, timeoutMs));
    return p.old;
  } catch (e) {
    await runner.stop(row.id);
    await rename(p.data, p.failed);
    if (hadData) await rename(p.old, p.data);
    runner.ensure({ ...current, status: 'starting' });
    await rm(p.failed, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
}

/**
 * After a crash during a restore keyed `key`: where the swap was half done (or done but not yet
 * recorded) the old data goes back, the service restarting on it; leftovers go.
 */
export async function repairRestore(ctx: AppContext, row: ManagedServiceRow, key: string): Promise<void> {
  const p = restorePaths(ctx, row, key);
  if (existsSync(p.old)) {
    const runner = runnerOf(ctx);
    await runner.stop(row.id);
    if (existsSync(p.data)) await rename(p.data, p.failed);
    await rename(p.old, p.data);
    const current = await store.findManaged(ctx.db, row.orgId, row.projectId, row.id);
    if (current?.desired === 'running') runner.ensure({ ...current, status: 'starting' });
  }
  for (const d of [p.staging, `${p.staging}.conf`, p.failed]) await rm(d, { recursive: true, force: true });
}
