#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test through tsx: first on SQLite, then again on
// PostgreSQL when DATABASE_URL is set. Prints node:test's summary for each run and, last, one
// closing line "N passed, N failed" over both.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const only = process.argv.slice(2).filter((a) => a !== '--');

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') continue;
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

let files = findTests(path.join(root, 'test'));
if (only.length) files = files.filter((f) => only.some((o) => f.includes(o)));
if (only.length && files.length === 0) {
  // node --test with no files would run every test it can find: say so instead.
  console.error(`no test file matches ${only.join(' ')}`);
  process.exit(2);
}

/**
 * What the PostgreSQL run leaves out: suites whose outcome does not depend on the store, run once on
 * SQLite. The browser suites (test/web: the dashboard drives the same API either way), files that
 * open no server and no database (drivers, detection, pure helpers), and files marked
 * `// @store-independent: <why>` on their first line.
 */
const STORE_USE = /startTestServer|startServe|startDashboardServer|freshPostgresDatabase|DATABASE_URL|createDatabase|usingPostgres/;
/** A test/support helper that starts a server (a story's `use…()` setup) makes its importers store-dependent. */
function supportStarts(text) {
  for (const m of text.matchAll(/from '\.\.\/support\/([\w-]+)\.js'/g)) {
    const f = path.join(root, 'test', 'support', `${m[1]}.ts`);
    try {
      const t = readFileSync(f, 'utf8');
      if (/export (async )?function use[A-Z]/.test(t) && STORE_USE.test(t)) return true;
    } catch { /* not a file of test/support */ }
  }
  return false;
}
function storeDependent(file) {
  if (file.includes(`${path.sep}test${path.sep}web${path.sep}`)) return false;
  const text = readFileSync(file, 'utf8');
  // A suite that starts a server but checks only what no store changes (the CLI, a client of the
  // HTTP API; the runtime's sandboxes and network) says so on its first line, with why.
  if (/^\/\/ @store-independent: \S/.test(text)) return false;
  return STORE_USE.test(text) || supportStarts(text);
}

function run(label, env, list = files) {
  return new Promise((resolve) => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-tap-'));
    const tap = path.join(tmp, 'out.tap');
    console.log(`\n=== ${label}: ${list.length} test files${list.length < files.length ? ` (${files.length - list.length} that do not depend on the store ran on SQLite only)` : ''} ===`);
    const args = [
      '--import', 'tsx',
      '--test',
      `--test-concurrency=${process.env.BERTH_TEST_CONCURRENCY ?? 2}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`,
      ...list,
    ];
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => {
      let pass = 0, fail = 0;
      try {
        const text = readFileSync(tap, 'utf8');
        pass = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0);
        fail = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0);
      } catch { fail = fail || 1; }
      rmSync(tmp, { recursive: true, force: true });
      console.log(`=== ${label}: ${pass} passed, ${fail} failed (exit ${code}) ===`);
      resolve({ pass, fail, code });
    });
  });
}

// Servers the suites start as root claim sandbox uid ranges (src/runtime/uid-range.ts): in a temp
// registry, never the host's /var/lib/berth one.
process.env.BERTH_UID_REGISTRY ??= path.join(os.tmpdir(), 'berth-test-uid-ranges.json');
const base = { ...process.env };
delete base.DATABASE_URL;
const results = [await run('sqlite', base)];
const onStore = files.filter(storeDependent);
// node --test with no files would run every file it can find (the fixtures too).
if (process.env.DATABASE_URL && onStore.length) results.push(await run('postgres', { ...process.env }, onStore));
else if (process.env.DATABASE_URL) console.log('\n=== postgres: no file that depends on the store matches: no PostgreSQL pass ===');
const pass = results.reduce((a, r) => a + r.pass, 0);
const fail = results.reduce((a, r) => a + r.fail, 0);
const bad = results.some((r) => r.code !== 0) || fail > 0;
console.log(`\n${pass} passed, ${fail} failed`);
process.exit(bad ? 1 : 0);
