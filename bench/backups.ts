import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rssMb, sampleRss, startChild, type Row } from './lib.js';

/**
 * Issue "Backups" point 11: a backup of a 1 GiB volume against `tar czf` of the same folder in the
 * same run (target >= 0.9 of its throughput), a restore against `tar xzf` (>= 0.9), and the server's
 * peak RSS under 150 MB (the kernel's own peak, VmHWM, reset once the server has started, so a
 * spike between samples counts). Both sides use gzip level 6 (GNU tar's default through gzip). The volume
 * is half incompressible (random) and half text-like, in 64 files. `BENCH_BACKUP_MB` scales it.
 * Our backup time includes the read-back verification; our restore time is apply -> succeeded.
 * Reference and ours alternate over three rounds (median of the ratios), since the machine and its
 * disk are shared. The server runs
 * as `npm start` runs it (compiled, the start script's node flags); its growth during the work is
 * reported beside the peak.
 */

const MB = 1024 * 1024;

function fillVolume(dir: string, totalMb: number): void {
  mkdirSync(path.join(dir, 'nested', 'deeper'), { recursive: true });
  const files = 64;
  const perFile = Math.max(1, Math.floor(totalMb / files)) * MB;
  const text = Buffer.from(
    Array.from({ length: 20000 }, (_, i) => `line ${i} the quick brown fox ${i % 97} jumps over the lazy dog ${(i * 7919) % 10007}\n`).join(''),
  );
  for (let f = 0; f < files; f++) {
    const file = path.join(dir, f % 2 ? 'nested/deeper' : 'nested', `file-${f}.bin`);
    const fd = openSync(file, 'w');
    let written = 0;
    while (written < perFile) {
      const chunk = f % 2 === 0 ? randomBytes(Math.min(MB, perFile - written)) : text.subarray(0, Math.min(text.length, perFile - written));
      writeSync(fd, chunk);
      written += chunk.length;
    }
    closeSync(fd);
  }
}

function timeCommand(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e9) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

async function waitStatus(url: string, headers: Record<string, string>, timeoutMs = 30 * 60_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(url, { headers });
    const body = (await res.json()) as { data: { status: string; error?: string } };
    if (['succeeded', 'failed', 'cancelled', 'server_error'].includes(body.data.status)) return body.data;
    if (Date.now() > end) throw new Error(`timed out waiting for ${url}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The peak RSS (VmHWM) of the server's children that archive or extract a volume
 * (src/modules/backups/volume-child.ts), read from /proc every `everyMs` while they live: VmHWM is
 * the kernel's own peak, so only growth in a child's last interval can be missed. Per command
 * (`pack`, `unpack`), the highest seen.
 */
function sampleVolumeChildren(serverPid: number, everyMs = 50): { stop(): Record<string, number> } {
  const peaks: Record<string, number> = {};
  const scan = () => {
    for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== serverPid) continue;
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const at = argv.findIndex((a) => /volume-child\.(js|ts)$/.test(a));
        if (at < 0) continue;
        const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
        const cmd = argv[at + 1] ?? '?';
        if (Number.isFinite(hwm) && hwm > (peaks[cmd] ?? 0)) peaks[cmd] = hwm;
      } catch {
        /* gone meanwhile */
      }
    }
  };
  const t = setInterval(scan, everyMs);
  return {
    stop() {
      clearInterval(t);
      return peaks;
    },
  };
}

/** With BENCH_MEM_TRACE=1 the server prints its memory every 100 ms; these lines say what ran when. */
function phase(name: string): void {
  if (process.env.BENCH_MEM_TRACE) console.error(`${Date.now() % 100000} phase: ${name}`);
}

export async function backupsBench(): Promise<Row[]> {
  const totalMb = Number(process.env.BENCH_BACKUP_MB ?? 1024);
  // BENCH_BACKUPS_DIR=/dev/shm puts the volume, the destination, the references and Berth's data dir on tmpfs.
  const work = mkdtempSync(path.join(process.env.BENCH_BACKUPS_DIR ?? os.tmpdir(), 'berth-bench-backups-'));
  const dataDir = path.join(work, 'berth');
  const destDir = path.join(work, 'dest');
  const refDir = path.join(work, 'ref');
  mkdirSync(refDir, { recursive: true });
  const berth = await startChild('bench/servers/berth.mjs', { BENCH_DATA_DIR: dataDir, BERTH_LOCAL_BACKUP_ROOT: work });
  try {
    const auth = { authorization: `Bearer ${berth.info.token}`, 'content-type': 'application/json' };
    const post = async (url: string, body: unknown) => {
      const res = await fetch(`${berth.info.url}${url}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { data: any }).data;
    };
    const project = await post('/api/projects', { name: 'bench-backups' });
    const volume = path.join(dataDir, 'volumes', project.id, 'data');
    mkdirSync(volume, { recursive: true });
    console.error(`  writing a ${totalMb} MiB volume ...`);
    fillVolume(volume, totalMb);
    const dest = await post('/api/backup-destinations', { name: 'bench', kind: 'local', path: destDir });
    const policy = await post(`/api/projects/${project.id}/backup-policies`, { destinationId: dest.id });

    // Three rounds, reference and ours alternating, each step after `sync` and a short pause (a
    // deletion or write-back of the step before must not slow the next one: ext4 here is mounted with
    // `discard`); the median of the per-round ratios is reported. Nothing the bench wrote is deleted
    // until the end. The server's RSS is sampled through all of it.
    const ROUNDS = 3;
    const settle = async () => {
      spawnSync('sync');
      await new Promise((r) => setTimeout(r, 2000));
    };
    const baseline = rssMb(berth.info.pid);
    const rss = sampleRss(berth.info.pid);
    const children = sampleVolumeChildren(berth.info.pid);
    const backups: { tar: number; ours: number; runId: string; sizeBytes: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await settle();
      phase(`reference tar czf ${round}`);
      const tar = await timeCommand('tar', ['czf', path.join(refDir, `ref-${round}.tar.gz`), '-C', volume, '.']);
      await settle();
      phase(`backup ${round}`);
      const t0 = process.hrtime.bigint();
      const { runId } = await post(`/api/backup-policies/${policy.id}/run`, {});
      const run = await waitStatus(`${berth.info.url}/api/backup-runs/${runId}`, auth);
      const ours = Number(process.hrtime.bigint() - t0) / 1e9;
      if (run.status !== 'succeeded') throw new Error(`backup run ${run.status}: ${run.error}`);
      backups.push({ tar, ours, runId, sizeBytes: Number(run.sizeBytes) });
    }
    console.error(`  server peak after the backups: ${rss.peek().toFixed(0)} MB, RSS now ${rssMb(berth.info.pid).toFixed(0)} MB`);
    const restores: { tar: number; ours: number; prepare: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const extractTo = path.join(refDir, `x-${round}`);
      mkdirSync(extractTo, { recursive: true });
      await settle();
      phase(`reference tar xzf ${round}`);
      const tar = await timeCommand('tar', ['xzf', path.join(refDir, 'ref-0.tar.gz'), '-C', extractTo]);
      await settle();
      phase(`restore prepare ${round}`);
      const prepT0 = process.hrtime.bigint();
      const { restoreId, confirmationToken } = await post(`/api/backup-runs/${backups[round]!.runId}/restore/prepare`, {});
      const prepare = Number(process.hrtime.bigint() - prepT0) / 1e9;
      phase(`restore apply ${round}`);
      const r0 = process.hrtime.bigint();
      await post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
      const restore = await waitStatus(`${berth.info.url}/api/backup-restores/${restoreId}`, auth);
      const ours = Number(process.hrtime.bigint() - r0) / 1e9;
      if (restore.status !== 'succeeded') throw new Error(`restore ${restore.status}: ${restore.error}`);
      console.error(`  restore ${round}: server ${(Date.parse(restore.finishedAt) - Date.parse(restore.appliedAt))} ms, client ${(ours * 1000).toFixed(0)} ms`);
      restores.push({ tar, ours, prepare });
    }
    phase('done');
    const peak = rss.stop();
    const childPeaks = children.stop();
    console.error(`  backups (tar s / ours s): ${backups.map((b) => `${b.tar.toFixed(1)}/${b.ours.toFixed(1)}`).join(', ')}`);
    console.error(`  restores (tar s / ours s): ${restores.map((b) => `${b.tar.toFixed(1)}/${b.ours.toFixed(1)}`).join(', ')}`);

    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const mbps = (s: number) => totalMb / s;
    const backupRatio = median(backups.map((b) => b.tar / b.ours));
    const restoreRatio = median(restores.map((r) => r.tar / r.ours));
    return [
      { bench: 'backups', metric: `backup ${totalMb} MiB volume (tar+gzip+sha256+verify, median of ${ROUNDS})`, value: mbps(median(backups.map((b) => b.ours))), unit: 'MiB/s', reference: mbps(median(backups.map((b) => b.tar))), ratio: backupRatio, target: '>= 0.9', ok: backupRatio >= 0.9 },
      { bench: 'backups', metric: `restore ${totalMb} MiB volume (apply, median of ${ROUNDS})`, value: mbps(median(restores.map((r) => r.ours))), unit: 'MiB/s', reference: mbps(median(restores.map((r) => r.tar))), ratio: restoreRatio, target: '>= 0.9', ok: restoreRatio >= 0.9 },
      { bench: 'backups', metric: 'restore prepare (artifact sha256 check, median)', value: median(restores.map((r) => r.prepare)) * 1000, unit: 'ms' },
      { bench: 'backups', metric: 'artifact size', value: backups[0]!.sizeBytes / MB, unit: 'MiB' },
      { bench: 'backups', metric: `server peak RSS during all backups and restores (${rss.exact ? 'VmHWM' : 'sampled'})`, value: peak, unit: 'MB', reference: baseline, target: '< 150 MB', ok: peak < 150 },
      { bench: 'backups', metric: 'server RSS growth during backups and restores', value: peak - baseline, unit: 'MB' },
      { bench: 'backups', metric: 'archiving child (volume-child pack) peak RSS, highest of the backups (VmHWM, sampled 50 ms)', value: childPeaks.pack ?? NaN, unit: 'MB' },
      { bench: 'backups', metric: 'extracting child (volume-child unpack) peak RSS, highest of the restores (VmHWM, sampled 50 ms)', value: childPeaks.unpack ?? NaN, unit: 'MB' },
    ];
  } finally {
    await berth.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
