import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SRC, sourceFiles } from './source-files.js';

/**
 * Stores scope their queries by org (and project) through one helper, `src/db/scope.ts`
 * (`.where(inOrg(orgId))`, `.where(inProject(orgId, projectId))`; issue 35 point 2), not by writing
 * the clause by hand. This counts the hand-written ones, `where('orgId', '=', ...)` and
 * `eb('orgId', '=', ...)` (table-qualified too, e.g. `'deployments.orgId'`), in every file under src/,
 * and fails where a file has more than the few listed below, each with its reason. (`whereRef` and
 * join conditions compare two columns, not a scope, and are not counted.)
 */

const RAW_ORG_CLAUSE = /\b(?:where|eb)\(\s*['"](?:\w+\.)?orgId['"]\s*,\s*['"]=['"]/g;

/**
 * `file (relative to src/)`: how many raw clauses it keeps and why. Exact: a file that drops one must
 * lower its number here, so every one left has its reason.
 */
const ALLOWED: Record<string, { n: number; why: string }> = {
  'modules/gitprovider/gitprovider.store.ts': { n: 1, why: "an installation nobody claimed yet (org null) or this org's: one side of an or(), not the query's scope" },
};

function rawClauses(file: string): number {
  return readFileSync(file, 'utf8').match(RAW_ORG_CLAUSE)?.length ?? 0;
}

test('org and project clauses are written with the scope helper (src/db/scope.ts), apart from the listed exceptions', () => {
  const over: string[] = [];
  const stale: string[] = [];
  const seen = new Set<string>();
  for (const file of sourceFiles(SRC)) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    const n = rawClauses(file);
    const allowed = ALLOWED[rel];
    if (allowed) seen.add(rel);
    if (n > (allowed?.n ?? 0)) over.push(`${rel}: ${n} hand-written org clause(s), ${allowed?.n ?? 0} allowed; use .where(inOrg(orgId)) / .where(inProject(orgId, projectId))`);
    else if (allowed && n < allowed.n) stale.push(`${rel}: ${n} left, ${allowed.n} listed; lower its number in ALLOWED`);
  }
  for (const rel of Object.keys(ALLOWED)) if (!seen.has(rel)) stale.push(`${rel}: no such file; remove it from ALLOWED`);
  assert.deepEqual(over, [], over.join('\n'));
  assert.deepEqual(stale, [], stale.join('\n'));
});

test('the count sees the forms stores write: plain, table-qualified, split over lines, inside an expression builder', () => {
  const sample = [
    "db.selectFrom('a').where('orgId', '=', orgId)",
    "q.where('deployments.orgId', '=', orgId)",
    "q\n    .where(\n      'orgId',\n      '=',\n      orgId)",
    "eb.or([eb('orgId', 'is', null), eb('orgId', '=', orgId)])",
    "whereRef('n.orgId', '=', 's.orgId')",
    "where('orgId', 'in', ids)",
  ].join('\n');
  assert.equal(sample.match(RAW_ORG_CLAUSE)?.length, 4);
});
