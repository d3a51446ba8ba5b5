/**
 * The detection corpus: each fixture folder `test/fixtures/detect/<case>/` may carry a sibling
 * `<case>.plan.json` with the plan a scan must answer (`plan`, exactly) and, optionally, the
 * framework and port. Provider tests check their cases with `expectPlan`; `npm run bench -- detect`
 * scores every case field by field.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import type { BuildPlan } from '../../../src/modules/detect/plan.js';
import { scanProject } from '../../../src/modules/detect/scan.js';

export const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures/detect');

export interface Expected {
  /** The provider the case belongs to (its test file checks it). */
  provider: string;
  plan: BuildPlan;
  framework?: string | null;
  port?: number | null;
}

/** Every case of the corpus that has an expected plan. */
export function corpus(): { name: string; dir: string; expected: Expected }[] {
  return readdirSync(FIXTURES)
    .filter((n) => n.endsWith('.plan.json'))
    .sort()
    .map((n) => {
      const name = n.slice(0, -'.plan.json'.length);
      return { name, dir: path.join(FIXTURES, name), expected: JSON.parse(readFileSync(path.join(FIXTURES, n), 'utf8')) as Expected };
    });
}

/** The cases of one provider. */
export function casesOf(provider: string): string[] {
  return corpus().filter((c) => c.expected.provider === provider).map((c) => c.name);
}

/** Scans the fixture and checks its plan (exactly) and, where given, its framework and port. */
export function expectPlan(name: string): void {
  const file = path.join(FIXTURES, `${name}.plan.json`);
  assert.ok(existsSync(file), `no ${name}.plan.json`);
  const expected = JSON.parse(readFileSync(file, 'utf8')) as Expected;
  const got = scanProject(path.join(FIXTURES, name));
  assert.deepEqual(got.plan, expected.plan, `plan of ${name}`);
  if (expected.framework !== undefined) assert.equal(got.framework, expected.framework, `framework of ${name}`);
  if (expected.port !== undefined) assert.equal(got.port, expected.port, `port of ${name}`);
}

const temps: string[] = [];

/** A temporary app folder holding the given files (removed when the test file ends). */
export function tempApp(files: Record<string, string>): string {
  if (!temps.length) after(() => temps.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-detect-'));
  temps.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}
