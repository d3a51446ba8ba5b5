import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { Header } from 'tar';
import { scanProject } from '../src/modules/detect/index.js';
import { rssMb, sampleRss, startChild, type Row } from './lib.js';

/**
 * Issue "Folder upload" point 7, measured in one run:
 * - a ~290 MB gzipped tarball uploaded through the relay: peak RSS growth of the server < 128 MB;
 * - upload-plus-extract throughput as a ratio of `tar xzf` of the same file (>= 0.7);
 * - a scan of a 10 000-file tree (with node_modules) < 200 ms.
 *
 * The throughput is measured twice: on tmpfs (/dev/shm: archive, tar's output and Berth's data dir),
 * which compares the two programs' work, and on the disk, which this shared VM makes noisy (tar alone
 * takes 1 to 5 s from one run to the next there). The target is judged on tmpfs; the disk row is
 * reported beside it. In each place reference and upload alternate three times and the median of
 * the three ratios is reported (each upload against the reference right before it).
 */
export async function uploadsBench(): Promise<Row[]> {
  const places: { label: string; dir: string; judged: boolean }[] = [];
  if (existsSync('/dev/shm')) places.push({ label: 'tmpfs', dir: '/dev/shm', judged: true });
  places.push({ label: 'disk', dir: os.tmpdir(), judged: places.length === 0 });
  const rows: Row[] = [];
  let growth = 0;
  for (const place of places) {
    const r = await measureUploads(place.dir);
    growth = Math.max(growth, r.growth);
    const mbps = (ms: number) => r.size / 1e6 / (ms / 1000);
    rows.push({
      bench: 'uploads',
      metric: `upload+extract ${(r.size / 1e6).toFixed(0)} MB on ${place.label} (median of 3)`,
      value: mbps(r.berthMs),
      unit: 'MB/s',
      reference: mbps(r.tarMs),
      ratio: r.ratio,
      target: place.judged ? '>= 0.7 of tar xzf' : 'reported',
      ok: place.judged ? r.ratio >= 0.7 : undefined,
    });
  }
  rows.push({ bench: 'uploads', metric: 'server peak RSS growth during upload (max of all)', value: growth, unit: 'MB', reference: 128, ratio: growth / 128, target: '< 128 MB', ok: growth < 128 });

  const work = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-scan-'));
  try {
    const tree = path.join(work, 'tree');
    makeTree(tree);
    scanProject(tree);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const a = performance.now();
      scanProject(tree);
      times.push(performance.now() - a);
    }
    times.sort((a, b) => a - b);
    const scanMs = times[2]!;
    rows.push({ bench: 'uploads', metric: 'scan of a 10 000-file tree (median of 5)', value: scanMs, unit: 'ms', reference: 200, ratio: scanMs / 200, target: '< 200 ms', ok: scanMs < 200 });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

async function measureUploads(base: string): Promise<{ size: number; ratio: number; berthMs: number; tarMs: number; growth: number }> {
  const work = mkdtempSync(path.join(base, 'berth-bench-uploads-'));
  try {
    const archive = path.join(work, 'source.tar.gz');
    await makeArchive(archive, 285 * 1000 * 1000);
    const size = statSync(archive).size;

    // Nothing is deleted until the end: removing hundreds of MB (ext4 here is mounted with `discard`)
    // stalls the file system's journal for seconds, which would slow whichever side runs next.
    const tarOnce = (round: number) => {
      const ref = path.join(work, `tar-out-${round}`);
      mkdirSync(ref);
      const t0 = performance.now();
      const tar = spawnSync('tar', ['xzf', archive, '-C', ref], { stdio: 'inherit' });
      const ms = performance.now() - t0;
      if (tar.status !== 0) throw new Error('tar xzf failed');
      return ms;
    };

    const berth = await startChild('bench/servers/berth.mjs', { BENCH_DATA_DIR: path.join(work, 'berth') });
    try {
      const auth = { authorization: `Bearer ${berth.info.token}`, 'content-type': 'application/json' };
      const rounds: { tarMs: number; berthMs: number; growth: number }[] = [];
      for (let round = 0; round < 3; round++) {
        const tarMs = tarOnce(round);
        const s = await fetch(`${berth.info.url}/api/projects/folder/session`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `bench-${round}`, sizeBytes: size }) });
        if (s.status !== 201) throw new Error(`session answered ${s.status}: ${await s.text()}`);
        const target = ((await s.json()) as { data: { url: string; headers: Record<string, string> } }).data;
        await new Promise((r) => setTimeout(r, 500));
        const baseline = rssMb(berth.info.pid);
        const sampler = sampleRss(berth.info.pid, 20);
        const t0 = performance.now();
        const status = await postFile(target.url, target.headers, archive, size);
        const berthMs = performance.now() - t0;
        const peak = sampler.stop();
        if (status !== 200) throw new Error(`upload answered ${status}`);
        rounds.push({ tarMs, berthMs, growth: peak - baseline });
      }
      console.error(`  ${base}: rounds (tar ms / berth ms): ${rounds.map((r) => `${r.tarMs.toFixed(0)}/${r.berthMs.toFixed(0)}`).join(', ')}`);
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      return {
        size,
        ratio: median(rounds.map((r) => r.tarMs / r.berthMs)),
        berthMs: median(rounds.map((r) => r.berthMs)),
        tarMs: median(rounds.map((r) => r.tarMs)),
        growth: Math.max(...rounds.map((r) => r.growth)),
      };
    } finally {
      await berth.stop();
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A gzipped tarball of about `target` compressed bytes: source-like text files and incompressible assets. */
async function makeArchive(file: string, target: number): Promise<void> {
  const out = createWriteStream(file);
  const gz = createGzip({ level: 6 });
  gz.pipe(out);
  const write = async (b: Buffer) => {
    if (!gz.write(b)) await once(gz, 'drain');
  };
  const entry = async (name: string, data: Buffer) => {
    const h = Buffer.alloc(512);
    new Header({ path: name, type: 'File', size: data.length, mode: 0o644, mtime: new Date(0) } as never).encode(h, 0);
    await write(h);
    await write(data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) await write(Buffer.alloc(pad));
  };
  const text = Buffer.from('export function handler(req, res) {\n  return res.send({ ok: true, at: Date.now() });\n}\n'.repeat(40));
  let i = 0;
  while (out.bytesWritten < target) {
    // 1 asset of 1 MB random bytes per 20 small source files.
    await entry(`assets/a${i}.bin`, randomBytes(1024 * 1024));
    for (let k = 0; k < 20; k++) await entry(`src/m${i}/f${k}.js`, text);
    i++;
    if (i % 16 === 0) await new Promise((r) => setImmediate(r));
  }
  await write(Buffer.alloc(1024));
  gz.end();
  await once(out, 'close');
}

function postFile(url: string, headers: Record<string, string>, file: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(size) } });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(req);
  });
}

function makeTree(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: { next: '15' }, scripts: { build: 'next build', start: 'next start' } }));
  writeFileSync(path.join(dir, 'package-lock.json'), '{}');
  for (let d = 0; d < 100; d++) {
    const sub = path.join(dir, d < 60 ? `node_modules/pkg${d}` : `src/mod${d}`);
    mkdirSync(sub, { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(path.join(sub, `f${f}.js`), 'x');
  }
}
