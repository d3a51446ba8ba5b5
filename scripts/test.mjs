#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test (each file bundled into plain ES modules first,
// scripts/test-bundles.mjs; BERTH_TEST_TSX=1 runs them through tsx instead) on SQLite and, when
// DATABASE_URL is set, again on PostgreSQL (the files that depend on the store), all in one pool of
// jobs. Prints each file's spec output when it ends, each store's sums, the failed files and, last,
// one closing line "N passed, N failed" over both. Arguments pick files by a part of their path.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleTests } from './test-bundles.mjs';

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


/**
 * Every (store, file) pair is one job, and one pool runs them all, longest first by the durations
 * the last runs took (`node_modules/.cache/berth-test-durations.json`, seeded from
 * `scripts/test-durations.json`): the PostgreSQL pass's files fill the gaps of the SQLite pass's
 * instead of waiting for its slowest file, and no run ends on one long file alone. A file never runs
 * on both stores at once (a suite may name a fixed interface, container or port). Each file runs in
 * its own node process (as `node --test` would run it); its output is printed whole when it ends.
 */
const concurrency = Math.max(1, Number(process.env.BERTH_TEST_CONCURRENCY ?? 2));
const seedFile = path.join(root, 'scripts', 'test-durations.json');
const cacheFile = path.join(root, 'node_modules', '.cache', 'berth-test-durations.json');
function readDurations(f) {
  try { return JSON.parse(readFileSync(f, 'utf8')); } catch { return {}; }
}
const durations = { ...readDurations(seedFile), ...readDurations(cacheFile) };
const rel = (f) => path.relative(root, f).split(path.sep).join('/');
const keyOf = (job) => `${job.store}:${rel(job.file)}`;
/** A file no run has timed yet: a browser suite is long, anything else middling. */
const guess = (job) => (rel(job.file).startsWith('test/web/') ? 60 : 30);

// Servers the suites start as root claim sandbox uid ranges (src/runtime/uid-range.ts): in a temp
// registry, never the host's /var/lib/berth one.
process.env.BERTH_UID_REGISTRY ??= path.join(os.tmpdir(), 'berth-test-uid-ranges.json');
const base = { ...process.env };
delete base.DATABASE_URL;
const stores = [{ name: 'sqlite', env: base, files }];
const onStore = process.env.DATABASE_URL ? files.filter(storeDependent) : [];
if (onStore.length) stores.push({ name: 'postgres', env: { ...process.env }, files: onStore });
for (const s of stores) {
  const left = files.length - s.files.length;
  console.log(`=== ${s.name}: ${s.files.length} test files${left ? ` (${left} that do not depend on the store run on SQLite only)` : ''} ===`);
}
if (process.env.DATABASE_URL && !onStore.length) console.log('=== postgres: no file that depends on the store matches: no PostgreSQL pass ===');

/**
 * Files that share one machine-wide thing and take turns at it through a lock of their own (the
 * Swarm suites share the engine's single swarm: test/support/swarm.ts): the pool never starts two
 * of a group at once, so no slot sits waiting on the lock while another file could run.
 */
function groupOf(file) {
  return /from '\.\.\/support\/swarm\.js'/.test(readFileSync(file, 'utf8')) ? 'docker-swarm' : file;
}
const jobs = stores.flatMap((s) => s.files.map((file) => ({ store: s.name, env: s.env, file, group: groupOf(file) })));
for (const j of jobs) j.estimate = durations[keyOf(j)] ?? guess(j);
jobs.sort((a, b) => b.estimate - a.estimate);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-test-'));

/**
 * Each test file as plain ES modules (node_modules/.cache, this run's own folder, removed at the
 * end): a test process under plain node starts about a second sooner than one under tsx. A file the
 * bundle cannot hold (it imports a computed path) runs through tsx, as every file does with
 * BERTH_TEST_TSX=1.
 */
const bundleDir = path.join(root, 'node_modules', '.cache', 'berth-test-bundles', String(process.pid));
let bundles = new Map();
// A run that was killed leaves its folder behind: the next one clears those of processes gone.
try {
  for (const pid of readdirSync(path.dirname(bundleDir))) {
    try { process.kill(Number(pid), 0); } catch { rmSync(path.join(path.dirname(bundleDir), pid), { recursive: true, force: true }); }
  }
} catch { /* no folder yet */ }
if (process.env.BERTH_TEST_TSX !== '1') {
  const began = Date.now();
  try {
    bundles = await bundleTests(root, files, bundleDir);
    console.log(`=== ${bundles.size} of ${files.length} test files bundled in ${((Date.now() - began) / 1000).toFixed(1)} s ===`);
  } catch (e) {
    // A source esbuild cannot read (a syntax error): every file runs through tsx, where that one fails on its own.
    console.log(`=== the test files could not be bundled; all run through tsx ===\n${e.message}`);
  }
}
const results = [];
const running = new Set();
let started = 0;
const t0 = Date.now();

/**
 * What a failed file's output says about its failures, printed again at the very end (a CI log is
 * often read from its tail): the spec reporter's closing "failing tests" section, or, when the file
 * did not get that far (a load error, a crash), the last lines it printed. At most 150 lines.
 */
function failuresOf(text) {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => /^\S*\s*failing tests:/.test(l.replace(/\x1b\[[0-9;]*m/g, '')));
  const part = at >= 0 ? lines.slice(at + 1) : lines.slice(-60);
  return part.slice(0, 150).join('\n').trimEnd();
}

function runJob(job) {
  return new Promise((resolve) => {
    const n = ++started;
    const out = path.join(tmp, `${n}.out`);
    const tap = path.join(tmp, `${n}.tap`);
    const fd = openSync(out, 'w');
    const bundle = bundles.get(job.file);
    const args = [
      ...(bundle ? ['--enable-source-maps'] : ['--import', 'tsx']),
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`,
      bundle ?? job.file,
    ];
    const began = Date.now();
    const child = spawn(process.execPath, args, { cwd: root, env: job.env, stdio: ['ignore', fd, fd] });
    child.on('exit', (code, signal) => {
      closeSync(fd);
      const seconds = (Date.now() - began) / 1000;
      let pass = 0, fail = 0;
      try {
        const text = readFileSync(tap, 'utf8');
        pass = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0);
        fail = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0);
      } catch { /* the file did not get as far as a report */ }
      // A file that exits non-zero without a failed case (a load error, a crash, a hang killed) is one failure.
      if ((code !== 0 || signal) && fail === 0) fail = 1;
      const text = readFileSync(out, 'utf8');
      const result = { ...job, pass, fail, code, signal, seconds, failures: fail ? failuresOf(text) : '' };
      results.push(result);
      const head = `--- [${job.store}] ${rel(job.file)}: ${pass} passed, ${fail} failed, ${seconds.toFixed(1)} s (${results.length}/${jobs.length}, ${((Date.now() - t0) / 60000).toFixed(1)} min)`;
      process.stdout.write(`\n${head}\n${text}`);
      resolve(result);
    });
  });
}

await new Promise((done) => {
  const pending = [...jobs];
  const next = () => {
    if (!pending.length && !running.size) return done();
    while (running.size < concurrency) {
      // The longest job whose file (or group) is not running now, on either store.
      const i = pending.findIndex((j) => ![...running].some((r) => r.group === j.group));
      if (i < 0) break;
      const [job] = pending.splice(i, 1);
      running.add(job);
      runJob(job).then(() => { running.delete(job); next(); });
    }
  };
  next();
});
rmSync(tmp, { recursive: true, force: true });
rmSync(bundleDir, { recursive: true, force: true });

try {
  mkdirSync(path.dirname(cacheFile), { recursive: true });
  const seen = readDurations(cacheFile);
  for (const r of results) seen[keyOf(r)] = Math.round(r.seconds * 10) / 10;
  writeFileSync(cacheFile, `${JSON.stringify(seen, null, 1)}\n`);
} catch { /* durations only order the next run */ }

let pass = 0, fail = 0;
console.log('');
for (const s of stores) {
  const mine = results.filter((r) => r.store === s.name);
  const p = mine.reduce((a, r) => a + r.pass, 0), f = mine.reduce((a, r) => a + r.fail, 0);
  pass += p; fail += f;
  console.log(`=== ${s.name}: ${mine.length} files, ${p} passed, ${f} failed ===`);
}
const failed = results.filter((r) => r.fail > 0);
for (const r of failed) {
  console.log(`\n=== what failed in [${r.store}] ${rel(r.file)} ===\n${r.failures}`);
}
console.log('');
for (const r of failed) console.log(`failed: [${r.store}] ${rel(r.file)} (${r.fail}${r.signal ? `, ${r.signal}` : r.code ? `, exit ${r.code}` : ''})`);
console.log(`\n${pass} passed, ${fail} failed in ${((Date.now() - t0) / 60000).toFixed(1)} min`);
process.exit(failed.length ? 1 : 0);
