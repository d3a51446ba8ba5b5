/**
 * `npm run bench [-- name ...]`: runs the benches (all, or the named ones) and prints one table of
 * figures with ratios against references measured in the same run.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { printRows, ROOT, type Bench, type Row } from './lib.js';

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
};

const wanted = process.argv.slice(2);
const rows: Row[] = [];
for (const [name, [file, fn]] of Object.entries(BENCHES)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const full = path.join(ROOT, 'bench', file);
  if (!existsSync(full)) continue;
  console.error(`running bench ${name} ...`);
  try {
    const mod = (await import(full)) as Record<string, Bench>;
    rows.push(...(await mod[fn]!()));
  } catch (e) {
    console.error(`bench ${name} failed: ${(e as Error).stack ?? e}`);
    rows.push({ bench: name, metric: 'error', value: NaN, unit: '', ok: false });
  }
}
printRows(rows);
