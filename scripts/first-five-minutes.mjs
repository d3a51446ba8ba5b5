#!/usr/bin/env node
// The README's "Five minutes to a first deploy", from a fresh clone, as a user runs it in a
// terminal (issue 34): clone, `npm install`, `npm start`, `berth admin create-user` + `berth login`,
// a folder with a real npm dependency (express), `berth deploy`, open the URL through the edge,
// `berth logs --follow`, a change and `berth deploy` again, `berth deployments`, `berth rollback`.
// Prints the wall time of each step and checks the targets: clone to first deploy served under 5
// minutes, the first `berth deploy` alone under 30 s.
//
//   node scripts/first-five-minutes.mjs [--repo PATH] [--cold-cache] [--compile-native] [--strict-times] [--keep]
//
// --repo: the repository to clone (default: the one this script is in), at its HEAD commit
// (uncommitted changes are not part of it). --cold-cache: npm uses an empty cache (a user's very
// first try; every package comes from the registry); by default npm's own cache is used, warm on a
// machine that installed before (a user's second try; on CI, `npm ci` just filled it).
// better-sqlite3's install downloads its prebuilt binary from GitHub, which this machine's network
// does not reach (it would compile from source instead: 100 CPU-seconds here, a minute or more of
// wall time that no user on the internet pays): the binary this checkout's own install made is put
// where prebuild-install keeps a downloaded one, in the npm cache the install uses, when it is not
// there already. --compile-native: leave it out, and compile as this network forces.
// --strict-times: a missed time target fails the script; by default it is printed as MISS and the
// exit status says only whether every step worked (a slow, shared CI machine must not turn CI red
// for time alone). --keep: leave the temporary folder for a look (the server is stopped anyway).
// Exit status: 0 when every step worked, 1 when one failed (its output and the server log's tail are
// printed), 2 on usage errors. Runs everything with argument arrays (no shell), on loopback, with
// its own ports, data dir (the clone's ./.berth) and CLI config; stops the server and removes the
// temporary folder at the end.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TARGET_TOTAL_S = 300;
const TARGET_DEPLOY_S = 30;
const HEALTH_WAIT_MS = 120_000;
const STEP_TIMEOUT_MS = 20 * 60_000;
/** How long `berth logs --follow` may take to show the app's start line. */
const UNTIL_TIMEOUT_MS = 30_000;
const EMAIL = 'you@example.com';
const PASSWORD = 'a long password for the five-minute path';

const argv = process.argv.slice(2);
const flags = new Set(argv.filter((a) => a.startsWith('--') && a !== '--repo'));
for (const f of flags) if (!['--cold-cache', '--compile-native', '--strict-times', '--keep'].includes(f)) usage(`unknown option ${f}`);
const repoAt = argv.indexOf('--repo');
if (repoAt >= 0 && !argv[repoAt + 1]) usage('--repo needs a path');
const repo = path.resolve(repoAt >= 0 ? argv[repoAt + 1] : path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));

function usage(msg) {
  console.error(`error: ${msg}\nusage: node scripts/first-five-minutes.mjs [--repo PATH] [--cold-cache] [--compile-native] [--strict-times] [--keep]`);
  process.exit(2);
}

// ---------------------------------------------------------------- processes

const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-five-minutes-'));
const dirs = { clone: path.join(tmp, 'berth'), config: path.join(tmp, 'config'), bin: path.join(tmp, 'bin'), app: path.join(tmp, 'code', 'my-app'), npmCache: path.join(tmp, 'npm-cache') };
/** Children still running (killed in cleanup), by pid. */
const running = new Map();
let server = null;

/** The environment every command runs with: the user's, plus `berth` on the PATH, the instance's ports and data dir, and a CLI config of its own. */
function userEnv(ports) {
  const env = { ...process.env, PATH: `${dirs.bin}${path.delimiter}${process.env.PATH ?? ''}`, XDG_CONFIG_HOME: dirs.config };
  // The caller's Berth settings are not the README's (its data dir is the clone's ./.berth), except
  // the sandbox uid base, which a machine running other instances may set to keep them apart.
  for (const k of Object.keys(env)) if ((k.startsWith('BERTH_') && k !== 'BERTH_SANDBOX_UID_BASE') || k === 'DATABASE_URL' || k === 'NODE_OPTIONS') delete env[k];
  if (ports) Object.assign(env, { BERTH_PORT: String(ports.api), BERTH_EDGE_PORT: String(ports.edge) });
  if (flags.has('--cold-cache')) env.npm_config_cache = dirs.npmCache;
  return env;
}

/**
 * Runs `cmd args` in `cwd` and answers { code, out } (stdout and stderr together, also echoed with
 * a margin so CI's log shows them). `input` goes to its stdin.
 */
function run(cmd, args, { cwd, env, input, until } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    running.set(child.pid, child);
    let out = '';
    const partial = { stdout: '', stderr: '' };
    let matched = false;
    // Echoed by whole lines; the token `admin create-user` prints is a secret: the log shows its prefix.
    const show = (text) => process.stdout.write(text.replace(/(berth_pat_)[A-Za-z0-9_-]+/g, '$1…').split(/\r|\n/).filter((l) => l.trim()).map((l) => `    | ${l}\n`).join(''));
    for (const stream of ['stdout', 'stderr']) {
      child[stream].on('data', (chunk) => {
        const text = chunk.toString('utf8');
        out += text;
        const lines = (partial[stream] + text).split('\n');
        partial[stream] = lines.pop();
        show(lines.join('\n'));
        // A command that runs until stopped (`logs --follow`): stopped once `until` shows.
        if (until && out.includes(until)) {
          matched = true;
          killGroup(child, 'SIGTERM');
        }
      });
    }
    child.stdin.end(input ?? '');
    let timedOut = false;
    const limit = until ? UNTIL_TIMEOUT_MS : STEP_TIMEOUT_MS;
    const timer = setTimeout(() => { timedOut = true; killGroup(child, 'SIGKILL'); }, limit);
    child.on('error', (e) => { clearTimeout(timer); running.delete(child.pid); reject(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      show(partial.stdout + '\n' + partial.stderr);
      running.delete(child.pid);
      if (timedOut) show(`(killed: still running after ${limit / 1000} s)`);
      resolve({ code: matched ? 0 : code ?? (signal ? 128 : 1), out, timedOut });
    });
  });
}

async function must(cmd, args, opts) {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`\`${[cmd, ...args].join(' ')}\` ${r.timedOut ? `was killed after ${STEP_TIMEOUT_MS / 60_000} minutes` : `exited ${r.code}`}`);
  return r.out;
}

function killGroup(child, signal) {
  try { process.kill(-child.pid, signal); } catch { /* gone */ }
}

/** Two free loopback ports (the README's 7300 and 7380 may be taken on a shared machine). */
async function freePorts() {
  const one = () => new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
  const api = await one();
  let edge = await one();
  while (edge === api) edge = await one();
  return { api, edge };
}

/** GET through the edge as curl does for `http://NAME.localhost:PORT`: to loopback, with that Host. */
function get(url) {
  const u = new URL(url);
  const address = u.hostname === 'localhost' || u.hostname.endsWith('.localhost') ? '127.0.0.1' : u.hostname;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: address, port: u.port || 80, path: u.pathname + u.search, headers: { host: u.host }, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- the steps

const times = [];
/** Runs one step, recording its wall time; a thrown error ends the walk. */
async function step(name, fn) {
  console.log(`\n--- ${name}`);
  const t0 = performance.now();
  try {
    const note = await fn();
    times.push({ name, s: (performance.now() - t0) / 1000, ok: true });
    if (note) console.log(`    ${note}`);
  } catch (e) {
    times.push({ name, s: (performance.now() - t0) / 1000, ok: false });
    throw e;
  }
}

const APP_JS = (version) => `const express = require('express');
const app = express();
app.get('/', (req, res) => res.send('hello from express ' + require('express/package.json').version + ', ${version}\\n'));
const port = Number(process.env.PORT) || 3000;
app.listen(port, () => console.log('my-app ${version} listening on ' + port));
`;

/** The npm cache `npm install` uses with `env`. */
function npmCacheOf(env) {
  if (env.npm_config_cache) return env.npm_config_cache;
  try {
    return execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8', env }).trim();
  } catch {
    return '';
  }
}

/**
 * better-sqlite3's prebuilt binary, as a user's install would download it from GitHub (see the top
 * of this file): the one this checkout's install made, packed as prebuild-install's download is
 * (`build/Release/better_sqlite3.node`) at the name prebuild-install looks for in `<cache>/_prebuilds`
 * (its own util computes the URL the name is hashed from). Answers what it did, for the log.
 */
function seedNativePrebuild(env) {
  const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const pkgDir = path.join(here, 'node_modules', 'better-sqlite3');
  const binary = path.join(pkgDir, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(binary)) return 'better-sqlite3 compiles from source (this checkout has no binary of it to give)';
  const cache = npmCacheOf(env);
  if (!cache) return 'better-sqlite3 compiles from source (no npm cache found)';
  const util = createRequire(path.join(here, 'package.json'))('prebuild-install/util');
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const url = util.getDownloadUrl({ pkg, platform: process.platform, arch: process.arch, libc: '', runtime: 'node', abi: process.versions.modules, 'tag-prefix': 'v' });
  const name = `${createHash('sha512').update(url).digest('hex').slice(0, 6)}-${path.basename(url).replace(/[^a-zA-Z0-9.]+/g, '-')}`;
  const file = path.join(cache, '_prebuilds', name);
  if (existsSync(file)) return `better-sqlite3's binary for ${url} is in the npm cache already (${file})`;
  mkdirSync(path.dirname(file), { recursive: true });
  const tmpFile = `${file}.${process.pid}.tmp`;
  execFileSync('tar', ['-czf', tmpFile, '-C', pkgDir, 'build/Release/better_sqlite3.node']);
  renameSync(tmpFile, file);
  return `better-sqlite3's binary, as a user's install downloads it from ${url}: this checkout's, put in ${file}`;
}

function npmCacheNote() {
  if (flags.has('--cold-cache')) return `an empty npm cache (${dirs.npmCache}): a first try, every package from the registry`;
  let cache = '';
  try { cache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim(); } catch { /* npm answers below */ }
  const filled = cache && existsSync(path.join(cache, '_cacache')) && readdirSync(path.join(cache, '_cacache')).length > 0;
  return filled ? `npm's own cache (${cache}), already filled: a second try's install` : `npm's own cache (${cache || '?'}), empty: a first try's install`;
}

/** Expects the app's answer at `url` to be express's, saying `version`. */
async function expectServes(url, version) {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`${url} answered ${r.status}: ${r.body.slice(0, 300)}`);
  if (!/^hello from express \d+\.\d+\.\d+/.test(r.body) || !r.body.includes(version) || r.headers['x-powered-by'] !== 'Express') {
    throw new Error(`${url} did not serve the express app's ${version}: ${r.status} ${JSON.stringify(r.body.slice(0, 300))}`);
  }
  return `${url} -> ${r.body.trim()}`;
}

/** The URL `berth deploy` printed last on stdout. */
function deployedUrl(out) {
  const urls = out.match(/https?:\/\/\S+/g) ?? [];
  const url = urls.at(-1);
  if (!url) throw new Error('`berth deploy` printed no URL');
  return url;
}

async function walk() {
  const commit = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  console.log(`the README's five-minute path from a fresh clone of ${repo} at ${commit.slice(0, 12)} (Node ${process.version}), in ${tmp}`);
  const ports = await freePorts();
  const env = userEnv(ports);
  const api = `http://127.0.0.1:${ports.api}`;
  let url = '';

  await step('git clone', async () => {
    await must('git', ['clone', '--quiet', '--no-checkout', repo, dirs.clone]);
    await must('git', ['-C', dirs.clone, 'checkout', '--quiet', commit]);
  });
  await step('npm install (builds dist/ and the dashboard)', async () => {
    console.log(`    with ${npmCacheNote()}`);
    if (!flags.has('--compile-native')) console.log(`    ${seedNativePrebuild(env)}`);
    await must('npm', ['install'], { cwd: dirs.clone, env });
    for (const f of ['dist/cli/index.js', 'dist/web/index.html']) if (!existsSync(path.join(dirs.clone, f))) throw new Error(`npm install did not make ${f}`);
  });
  await step('npm start (until /api/health answers; the dashboard at /)', () => startServer(env, api));
  await step('sign up: berth admin create-user, berth login', async () => {
    mkdirSync(dirs.bin, { recursive: true });
    symlinkSync(path.join(dirs.clone, 'bin', 'berth'), path.join(dirs.bin, 'berth')); // the README's ln -sf
    await must('berth', ['admin', 'create-user', '--email', EMAIL, '--password', PASSWORD], { cwd: dirs.clone, env });
    await must('berth', ['login', '--server', api, '--email', EMAIL, '--password-stdin'], { cwd: dirs.clone, env, input: PASSWORD });
  });
  await step('an app folder with a real dependency (npm install express)', async () => {
    mkdirSync(dirs.app, { recursive: true });
    writeFileSync(path.join(dirs.app, 'package.json'), JSON.stringify({ name: 'my-app', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }, null, 2) + '\n');
    writeFileSync(path.join(dirs.app, 'server.js'), APP_JS('v1'));
    await must('npm', ['install', '--no-audit', '--no-fund', 'express'], { cwd: dirs.app, env });
  });
  await step('berth deploy (first)', async () => {
    url = deployedUrl(await must('berth', ['deploy'], { cwd: dirs.app, env }));
    return `printed ${url}`;
  });
  await step('open the URL', () => expectServes(url, 'v1'));
  await step('berth logs --follow (until the app\'s start line)', async () => {
    const start = 'my-app v1 listening on';
    const r = await run('berth', ['logs', '--follow'], { cwd: dirs.app, env, until: start });
    if (!r.out.includes(start)) throw new Error(`\`berth logs --follow\` ended (${r.code}) without the app's start line within ${UNTIL_TIMEOUT_MS / 1000} s`);
    return 'the app\'s start line is in the log';
  });
  await step('change the app, berth deploy again', async () => {
    writeFileSync(path.join(dirs.app, 'server.js'), APP_JS('v2'));
    const again = deployedUrl(await must('berth', ['deploy'], { cwd: dirs.app, env }));
    if (again !== url) throw new Error(`the second deploy printed ${again}, not ${url}: not the same project`);
    return expectServes(url, 'v2');
  });
  await step('berth deployments', async () => {
    const out = await must('berth', ['deployments'], { cwd: dirs.app, env });
    if ((out.match(/\bready\b/g) ?? []).length < 2) throw new Error('`berth deployments` does not list two ready deployments');
  });
  await step('berth rollback my-app', async () => {
    await must('berth', ['rollback', 'my-app'], { cwd: dirs.app, env });
    return expectServes(url, 'v1');
  });
}

/** `npm start` as a child of its own (process group), then GET /api/health until it answers. */
async function startServer(env, api) {
  const log = path.join(tmp, 'server.log');
  server = { log, child: spawn('npm', ['start'], { cwd: dirs.clone, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true }), out: '' };
  const keep = (c) => { server.out += c.toString('utf8'); };
  server.child.stdout.on('data', keep);
  server.child.stderr.on('data', keep);
  let exited = null;
  server.child.on('exit', (code) => (exited = code ?? 1));
  const deadline = Date.now() + HEALTH_WAIT_MS;
  for (;;) {
    if (exited !== null) throw new Error(`npm start exited ${exited} before /api/health answered`);
    const h = await fetch(`${api}/api/health`).then((r) => (r.ok ? r.json() : null)).catch(() => null);
    if (h?.data?.status === 'ok') {
      const rt = h.data.runtime ?? {};
      if (!rt.ready) throw new Error(`the server runs, but its runtime is not ready: ${rt.reason ?? JSON.stringify(rt)}`);
      // "Open http://localhost:7300 in a browser: the dashboard."
      const page = await fetch(`${api}/`).then(async (r) => ({ status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text() }));
      if (page.status !== 200 || !page.type.includes('text/html') || !page.body.includes('<script')) throw new Error(`${api}/ is not the dashboard: ${page.status} ${page.type}`);
      return `${api} answers: ${h.data.mode}, ${h.data.database}, runtime ${rt.driver} ready${rt.egress ? `, egress ${JSON.stringify(rt.egress)}` : ''}`;
    }
    if (Date.now() > deadline) throw new Error(`/api/health did not answer within ${HEALTH_WAIT_MS / 1000} s`);
    await sleep(250);
  }
}

// ---------------------------------------------------------------- report and cleanup

function report() {
  const byName = (prefix) => times.find((t) => t.name.startsWith(prefix));
  console.log('\n=== the five-minute path: wall time per step ===');
  for (const t of times) console.log(`${t.ok ? '  ok  ' : '  FAIL'}  ${t.s.toFixed(1).padStart(7)} s  ${t.name}`);
  const total = times.reduce((a, t) => a + t.s, 0);
  console.log(`        ${total.toFixed(1).padStart(7)} s  all steps`);
  const deploy = byName('berth deploy (first)');
  if (!deploy?.ok) return true;
  const upTo = times.slice(0, times.indexOf(deploy) + 1).reduce((a, t) => a + t.s, 0);
  const lines = [
    [upTo < TARGET_TOTAL_S, `clone + install + first deploy served: ${upTo.toFixed(1)} s (target < ${TARGET_TOTAL_S} s)`],
    [deploy.s < TARGET_DEPLOY_S, `first berth deploy alone: ${deploy.s.toFixed(1)} s (target < ${TARGET_DEPLOY_S} s)`],
  ];
  for (const [ok, text] of lines) console.log(`  ${ok ? 'PASS' : 'MISS'}  ${text}`);
  const missed = lines.some(([ok]) => !ok);
  if (missed && !flags.has('--strict-times')) console.log('  (a MISS does not fail this run: the times are targets; --strict-times makes it fail)');
  return !missed || !flags.has('--strict-times');
}

let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const child of running.values()) killGroup(child, 'SIGKILL');
  if (server) {
    // SIGTERM: Berth drains, stops its apps and removes its host rules, then exits 0.
    const gone = new Promise((r) => (server.child.exitCode !== null || server.child.signalCode ? r() : server.child.once('exit', r)));
    killGroup(server.child, 'SIGTERM');
    const stopped = await Promise.race([gone.then(() => true), sleep(30_000).then(() => false)]);
    if (!stopped) {
      console.log('the server did not stop within 30 s of SIGTERM: killed');
      killGroup(server.child, 'SIGKILL');
    }
    writeFileSync(server.log, server.out);
  }
  if (flags.has('--keep')) return void console.log(`kept ${tmp}`);
  // Volume images stay mounted after a server stops (docs/runtime.md "Disk limits"): a user's next
  // start re-uses them. This run's are unmounted before its folder goes (the loop devices go with them).
  for (const dir of mountsBelow(tmp).reverse()) {
    try { execFileSync('umount', [dir], { stdio: 'ignore' }); } catch { try { execFileSync('umount', ['-l', dir], { stdio: 'ignore' }); } catch { console.log(`could not unmount ${dir}`); } }
  }
  try { rmSync(tmp, { recursive: true, force: true, maxRetries: 3 }); } catch (e) { console.log(`could not remove ${tmp}: ${e.message}`); }
}

for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => void cleanup().finally(() => process.exit(130)));

let code = 0;
try {
  await walk();
} catch (e) {
  code = 1;
  console.error(`\nFAILED: ${e.message}`);
  if (server) console.error(`--- the server's last output:\n${server.out.split('\n').slice(-40).join('\n')}`);
} finally {
  await cleanup();
}
if (!report()) code = 1;
process.exit(code);

/** Mount points at or below `dir` (the fifth field of /proc/self/mountinfo), outermost first. */
function mountsBelow(dir) {
  let text = '';
  try { text = readFileSync('/proc/self/mountinfo', 'utf8'); } catch { return []; }
  const unescape = (p) => p.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  return text.split('\n').map((l) => unescape(l.split(' ')[4] ?? '')).filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => a.length - b.length);
}
