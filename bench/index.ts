/**
 * `npm run bench [-- name ...] [--save FILE] [--compare FILE]`: runs the benches (all, or the named
 * ones) and prints one table of figures with ratios against references measured in the same run.
 * The run is saved as JSON to `bench/runs/latest.json` (and FILE with `--save`); `--compare FILE`
 * then names the figures that moved by more than 15 % against that earlier run (bench/compare.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { compareRuns, formatComparison, type SavedRun } from './compare.js';
import { printRows, ROOT, type Bench, type Row } from './lib.js';
import { describeVcpuSpeeds } from './pin.js';

/** name -> [file, exported function]. Areas add their bench here. */
const BENCHES: Record<string, [string, string]> = {
  foundation: ['foundation.ts', 'foundationBench'],
  projects: ['projects.ts', 'projectsBench'],
  uploads: ['uploads.ts', 'uploadsBench'],
  edge: ['edge.ts', 'edgeBench'],
  backups: ['backups.ts', 'backupsBench'],
  detect: ['detect.ts', 'detectBench'],
  docker: ['docker.ts', 'dockerBench'],
  https: ['https.ts', 'httpsBench'],
  dashboard: ['dashboard.ts', 'dashboardBench'],
  postgres: ['postgres.ts', 'postgresBench'],
  builds: ['builds.ts', 'buildsBench'],
  services: ['services.ts', 'servicesBench'],
  logs: ['logs.ts', 'logsBench'],
  observability: ['observability.ts', 'observabilityBench'],
};

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (!v || v.startsWith('--')) throw new Error(`${name} needs a file`);
  args.splice(i, 2);
  return v;
};
const saveTo = flag('--save');
const compareWith = flag('--compare');
const earlier = compareWith ? (JSON.parse(readFileSync(compareWith, 'utf8')) as SavedRun) : undefined;
const wanted = args;
const loadStart = loadavg()[0]!;
const rows: Row[] = [];
/** Per bench, the vCPUs' speeds at its start and end (`describeVcpuSpeeds`). */
const vcpus: Record<string, { start: string | null; end: string | null }> = {};
for (const [name, [file, fn]] of Object.entries(BENCHES)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const full = path.join(ROOT, 'bench', file);
  if (!existsSync(full)) continue;
  console.error(`running bench ${name} ...`);
  // The vCPUs' speeds just now (bench/pin.ts): the VM's slow state shows as one at 0.3-0.7.
  const speedsBefore = describeVcpuSpeeds();
  if (speedsBefore) console.error(`  vCPU speeds at the start (the same loop, against the fastest): ${speedsBefore}`);
  try {
    const mod = (await import(full)) as Record<string, Bench>;
    rows.push(...(await mod[fn]!()));
  } catch (e) {
    console.error(`bench ${name} failed: ${(e as Error).stack ?? e}`);
    rows.push({ bench: name, metric: 'error', value: NaN, unit: '', ok: false });
  }
  const speedsAfter = describeVcpuSpeeds();
  if (speedsAfter) console.error(`  vCPU speeds at the end: ${speedsAfter}`);
  if (speedsBefore || speedsAfter) vcpus[name] = { start: speedsBefore, end: speedsAfter };
}
printRows(rows);

let commit: string | undefined;
try {
  commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
} catch {
  /* not a checkout */
}
const run: SavedRun = { at: new Date().toISOString(), commit, load: { start: loadStart, end: loadavg()[0]! }, vcpus, rows };
mkdirSync(path.join(ROOT, 'bench', 'runs'), { recursive: true });
for (const file of [path.join(ROOT, 'bench', 'runs', 'latest.json'), saveTo]) {
  if (file) writeFileSync(file, JSON.stringify(run, null, 2) + '\n');
}
console.log(`\nrun saved to bench/runs/latest.json${saveTo ? ` and ${saveTo}` : ''} (load ${run.load!.start.toFixed(1)}-${run.load!.end.toFixed(1)})`);
if (earlier) console.log(`\n${formatComparison(compareRuns(earlier.rows, rows), earlier)}`);
