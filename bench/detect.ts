/**
 * `npm run bench -- detect`: detection accuracy over the fixture corpus (every
 * `test/fixtures/detect/<case>.plan.json`), per plan field, and the scan time of the whole corpus
 * against a reference that only lists the same folders. Targets (issue 17): runtime right on at
 * least 95% of the cases, start command on at least 90%.
 */
import { readdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { scanProject } from '../src/modules/detect/scan.js';
import { corpus } from '../test/detect/providers/support.js';
import type { Bench, Row } from './lib.js';

const FIELDS = ['runtime', 'version', 'install', 'build', 'start', 'static', 'framework'] as const;

export const detectBench: Bench = async () => {
  const cases = corpus();
  const right: Record<string, number> = Object.fromEntries(FIELDS.map((f) => [f, 0]));
  const misses: string[] = [];
  const providers = new Set<string>();
  for (const c of cases) {
    providers.add(c.expected.provider);
    const got = scanProject(c.dir);
    for (const field of FIELDS) {
      const want = field === 'framework' ? (c.expected.framework ?? got.framework) : (c.expected.plan as unknown as Record<string, unknown>)[field];
      const have = field === 'framework' ? got.framework : (got.plan as unknown as Record<string, unknown>)[field];
      if (isDeepStrictEqual(have, want)) right[field]!++;
      else misses.push(`${c.name}: ${field} ${JSON.stringify(have)} (expected ${JSON.stringify(want)})`);
    }
  }
  for (const m of misses) console.error(`  miss ${m}`);
  const n = cases.length;
  const rows: Row[] = [{ bench: 'detect', metric: `corpus cases (${providers.size} providers)`, value: n, unit: 'cases', target: '>= 60', ok: n >= 60 }];
  for (const field of FIELDS) {
    const pct = n ? (100 * right[field]!) / n : 0;
    const target = field === 'runtime' ? 95 : field === 'start' ? 90 : undefined;
    rows.push({ bench: 'detect', metric: `${field} right`, value: pct, unit: '%', ...(target ? { target: `>= ${target}%`, ok: pct >= target } : {}) });
  }
  // Speed: the scans against a reference that only lists each case's folder (the least a scan does).
  const rounds = 20;
  let t0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const c of cases) readdirSync(c.dir, { withFileTypes: true });
  const listing = (performance.now() - t0) / rounds;
  t0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const c of cases) scanProject(c.dir);
  const scanning = (performance.now() - t0) / rounds;
  rows.push({ bench: 'detect', metric: 'scan of the corpus', value: scanning, unit: 'ms', reference: listing, ratio: listing / scanning });
  return rows;
};
