import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { argvAt } from '../src/runtime/netns-join.js';
import { rssMb, sampleRss, startChild, type Row } from './lib.js';

/**
 * Issue 37 point 8, on the sandbox runtime (as root): a managed PostgreSQL's backup (pg_dump -Fc
 * through the verified pipeline: temp name, read-back, sha256, final name) against `pg_dump -Fc` to a
 * file of the same database (>= 0.9 of its throughput); a restore (prepare + apply: a fresh instance
 * made from the artifact, checked, swapped in) against `initdb` + start + `pg_restore` (the flags
 * Berth uses) into a fresh cluster (>= 0.9); the server's peak RSS through the backups (VmHWM, reset
 * before them: issue 37 point 7's "without the server's RSS growing past 150 MB", here on the compiled
 * server as `npm start` runs it; test/services/dump-memory.test.ts is the same check as a test, opt-in
 * for its minutes); and create-to-ready (POST -> `running`) of a new
 * PostgreSQL (< 5 s, an initdb included) and Redis (< 2 s). The reference pg_dump runs where
 * Berth's does: inside the service's network namespace, with the same credentials.
 *
 * The database: 1 KiB rows, a quarter random (base64) and the rest repetitive, in a logged table with
 * a primary key (what an app's table is: until 2026-11-29 an unlogged one without an index, quicker to
 * fill, whose restore is a bare copy no real database resembles). BENCH_SERVICES_MB (default 1024) sizes it, BENCH_SERVICES_ROUNDS (default 3) the
 * rounds (a backup round alternates whether pg_dump or Berth goes first; the table is vacuumed after
 * the fill, so no round meets autovacuum's first pass); ratios are medians of the per-round ratios.
 */
const MB = 1024 * 1024;
const PG_BIN = '/usr/lib/postgresql/15/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Runs a program to its end; its wall time in seconds. */
function timed(bin: string, args: string[], opts: { env?: Record<string, string>; uid?: number; gid?: number } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin', ...opts.env }, uid: opts.uid, gid: opts.gid });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e9) : reject(new Error(`${path.basename(bin)} exited ${code}: ${err}`))));
  });
}

export async function servicesBench(): Promise<Row[]> {
  if (process.getuid?.() !== 0) return [{ bench: 'services', metric: 'skipped: the sandbox runs services only as root', value: NaN, unit: '' }];
  const sizeMb = Number(process.env.BENCH_SERVICES_MB ?? 1024);
  const rounds = Number(process.env.BENCH_SERVICES_ROUNDS ?? 3);
  const work = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-services-'));
  chmodSync(work, 0o755);
  const berth = await startChild('bench/servers/berth.mjs', { BERTH_RUNTIME: 'sandbox', BERTH_LOCAL_BACKUP_ROOT: work }, 240_000).catch((e: unknown) => {
    rmSync(work, { recursive: true, force: true });
    throw e;
  });
  const auth = { authorization: `Bearer ${berth.info.token}`, 'content-type': 'application/json' };
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${berth.info.url}${url}`, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { data: any }).data;
  };
  const until = async (url: string, done: (d: any) => boolean, timeoutMs = 30 * 60_000, everyMs = 100) => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const d = await call('GET', url);
      if (done(d)) return d;
      if (Date.now() > end) throw new Error(`timed out waiting for ${url}`);
      await sleep(everyMs);
    }
  };
  const ended = (d: any) => ['succeeded', 'failed', 'cancelled', 'server_error'].includes(d.status);
  try {
    const project = await call('POST', '/api/projects', { name: 'bench-services' });
    const svcUrl = (id: string) => `/api/projects/${project.id}/services/${id}`;
    const running = (id: string, timeoutMs = 120_000) =>
      until(svcUrl(id), (d) => {
        if (d.status === 'failed') throw new Error(`service failed: ${d.error}`);
        return d.status === 'running';
      }, timeoutMs, 25);

    // Create-to-ready: a new service each round, deleted after.
    const ready: Record<string, number[]> = { postgres: [], redis: [] };
    for (let round = 0; round < rounds; round++) {
      for (const kind of ['postgres', 'redis'] as const) {
        const t0 = process.hrtime.bigint();
        const s = await call('POST', `/api/projects/${project.id}/services`, { kind, name: `${kind}-${round}` });
        await running(s.id);
        ready[kind]!.push(Number(process.hrtime.bigint() - t0) / 1e9);
        await call('DELETE', svcUrl(s.id));
      }
    }
    console.error(`  create-to-ready s: postgres ${ready.postgres!.map((x) => x.toFixed(2)).join(', ')}; redis ${ready.redis!.map((x) => x.toFixed(2)).join(', ')}`);

    // The database to back up.
    const created = await call('POST', `/api/projects/${project.id}/services`, { kind: 'postgres', name: 'big', resources: { cpuCores: 2, memoryMb: 2048, diskMb: 8 * sizeMb + 1024 } });
    let s = await running(created.id);
    const c = await call('GET', `${svcUrl(s.id)}/credentials`);
    const pgEnv = (at: any) => ({ PGHOST: at.internalHost, PGPORT: String(at.port), PGUSER: c.username, PGPASSWORD: c.password, PGDATABASE: c.database, PGSSLMODE: 'disable' });
    const rows = Math.round((sizeMb * MB) / 1100);
    console.error(`  filling ${sizeMb} MiB (${rows} rows) ...`);
    const fill = argvAt(s.internalHost, '/usr/bin/psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `create extension pgcrypto; create table big (id int primary key, body text); insert into big select i, encode(gen_random_bytes(192), 'base64') || repeat(md5(i::text), 24) from generate_series(1, ${rows}) i`]);
    await timed(fill.bin, fill.args, { env: pgEnv(s) });
    // The fill's aftermath (autovacuum of the new table a minute later, the first scan setting every
    // row's hint bits) would land in whichever round ran then: settled here, before any round.
    const settle = argvAt(s.internalHost, '/usr/bin/psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', 'vacuum (analyze) big']);
    await timed(settle.bin, settle.args, { env: pgEnv(s) });
    const dest = await call('POST', '/api/backup-destinations', { name: 'bench', kind: 'local', path: path.join(work, 'dest') });
    const policy = await call('POST', `/api/projects/${project.id}/backup-policies`, { destinationId: dest.id, serviceId: s.id });
    const refDir = path.join(work, 'ref');
    mkdirSync(refDir, { recursive: true, mode: 0o755 });

    const baseline = rssMb(berth.info.pid);
    const rss = sampleRss(berth.info.pid);
    const backups: { ref: number; ours: number; runId: string; size: number; refSize: number }[] = [];
    for (let round = 0; round < rounds; round++) {
      const file = path.join(refDir, `ref-${round}.dump`);
      const dump = argvAt(s.internalHost, `${PG_BIN}/pg_dump`, ['--format=custom', '--no-password', '-f', file]);
      const reference = async () => {
        spawnSync('sync');
        return timed(dump.bin, dump.args, { env: pgEnv(s) });
      };
      const berths = async () => {
        spawnSync('sync');
        const t0 = process.hrtime.bigint();
        const { runId } = await call('POST', `/api/backup-policies/${policy.id}/run`);
        const run = await until(`/api/backup-runs/${runId}`, ended);
        const ours = Number(process.hrtime.bigint() - t0) / 1e9;
        if (run.status !== 'succeeded') throw new Error(`backup run ${run.status}: ${run.error}`);
        return { ours, run, runId: runId as string };
      };
      // Alternating which goes first, so neither always meets what the other left behind.
      let ref: number;
      let mine: Awaited<ReturnType<typeof berths>>;
      if (round % 2 === 0) {
        ref = await reference();
        mine = await berths();
      } else {
        mine = await berths();
        ref = await reference();
      }
      const { ours, run, runId } = mine;
      backups.push({ ref, ours, runId, size: Number(run.sizeBytes), refSize: statSync(file).size });
    }
    const peak = rss.stop();
    console.error(`  backups (pg_dump s / ours s): ${backups.map((b) => `${b.ref.toFixed(1)}/${b.ours.toFixed(1)}`).join(', ')}; artifact ${(backups[0]!.size / MB).toFixed(0)} MiB (pg_dump's ${(backups[0]!.refSize / MB).toFixed(0)} MiB)`);

    // The reference restore: a fresh cluster of the postgres user (initdb refuses root), started, the dump restored.
    const pgUser = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const pgGroup = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    const asPg = { uid: Number(pgUser.stdout.trim()), gid: Number(pgGroup.stdout.trim()) };
    const restores: { ref: number; ours: number }[] = [];
    for (let round = 0; round < rounds; round++) {
      const cluster = path.join(work, `cluster-${round}`);
      mkdirSync(cluster, { mode: 0o700 });
      chownSync(cluster, asPg.uid, asPg.gid);
      const port = String(56000 + Math.floor(Math.random() * 4000));
      spawnSync('sync');
      const t0 = process.hrtime.bigint();
      await timed(`${PG_BIN}/initdb`, ['-D', path.join(cluster, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], asPg);
      await timed(`${PG_BIN}/pg_ctl`, ['-D', path.join(cluster, 'data'), '-w', '-l', path.join(cluster, 'log'), '-o', `-p ${port} -k ${cluster} -c listen_addresses=`, 'start'], asPg);
      const pgArgs = ['-h', cluster, '-p', port, '-U', 'postgres'];
      await timed(`${PG_BIN}/createdb`, [...pgArgs, 'big'], asPg);
      await timed(`${PG_BIN}/pg_restore`, [...pgArgs, '-d', 'big', '--single-transaction', '--exit-on-error', '--no-owner', '--no-acl', path.join(refDir, 'ref-0.dump')], asPg);
      const ref = Number(process.hrtime.bigint() - t0) / 1e9;
      await timed(`${PG_BIN}/pg_ctl`, ['-D', path.join(cluster, 'data'), '-m', 'fast', 'stop'], asPg);
      rmSync(cluster, { recursive: true, force: true });
      spawnSync('sync');
      const r0 = process.hrtime.bigint();
      const { restoreId, confirmationToken } = await call('POST', `/api/backup-runs/${backups[round]!.runId}/restore/prepare`, {});
      await call('POST', `/api/backup-restores/${restoreId}/apply`, { confirmationToken });
      const restore = await until(`/api/backup-restores/${restoreId}`, ended);
      if (restore.status !== 'succeeded') throw new Error(`restore ${restore.status}: ${restore.error}`);
      s = await running(s.id);
      restores.push({ ref, ours: Number(process.hrtime.bigint() - r0) / 1e9 });
    }
    console.error(`  restores (initdb+pg_restore s / ours s): ${restores.map((r) => `${r.ref.toFixed(1)}/${r.ours.toFixed(1)}`).join(', ')}`);

    const mbps = (sec: number) => sizeMb / sec;
    const backupRatio = median(backups.map((b) => b.ref / b.ours));
    const restoreRatio = median(restores.map((r) => r.ref / r.ours));
    const pg = median(ready.postgres!);
    const redis = median(ready.redis!);
    return [
      { bench: 'services', metric: `postgres backup of ${sizeMb} MiB (pg_dump -Fc + sha256 + read-back, median of ${rounds})`, value: mbps(median(backups.map((b) => b.ours))), unit: 'MiB/s', reference: mbps(median(backups.map((b) => b.ref))), ratio: backupRatio, target: '>= 0.9', ok: backupRatio >= 0.9 },
      { bench: 'services', metric: `postgres restore of ${sizeMb} MiB (prepare + apply vs initdb + pg_restore, median of ${rounds})`, value: mbps(median(restores.map((r) => r.ours))), unit: 'MiB/s', reference: mbps(median(restores.map((r) => r.ref))), ratio: restoreRatio, target: '>= 0.9', ok: restoreRatio >= 0.9 },
      { bench: 'services', metric: 'postgres artifact size', value: backups[0]!.size / MB, unit: 'MiB' },
      { bench: 'services', metric: `server peak RSS during the backups (${rss.exact ? 'VmHWM' : 'sampled'})`, value: peak, unit: 'MB', reference: baseline, target: '< 150 MB', ok: peak < 150 },
      { bench: 'services', metric: 'server RSS growth during the backups', value: peak - baseline, unit: 'MB', target: '< 150 MB', ok: peak - baseline < 150 },
      { bench: 'services', metric: `postgres create-to-ready (sandbox, median of ${rounds})`, value: pg, unit: 's', target: '< 5 s', ok: pg < 5 },
      { bench: 'services', metric: `redis create-to-ready (sandbox, median of ${rounds})`, value: redis, unit: 's', target: '< 2 s', ok: redis < 2 },
    ];
  } finally {
    await berth.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
