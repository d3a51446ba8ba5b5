import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { stopInstance, type Instance, type InstanceDeps } from '../../src/runtime/app-instance.js';
import { parseCommand } from '../../src/runtime/command.js';
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js';
import { bridgeName, labelFilter } from '../../src/runtime/docker/containers.js';
import { createLogger } from '../../src/lib/logger.js';
import { LogStore } from '../../src/runtime/logs.js';
import { Supervisor } from '../../src/runtime/supervisor.js';
import { StartError, type ReleaseSpec } from '../../src/runtime/release-spec.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from '../support/docker.js';

// Apps as containers (ContainerApps) on the real Docker Engine: from a small image built here on
// berth-base/node:20 (scripts/docker-base-images.sh), each project on its own network.
const { engine, skip: noEngine, withEngine } = await dockerSuite('test/runtime/docker-apps');

const run = randomBytes(3).toString('hex');
const IMAGE = `berth-test/app-${run}:1`;
const root = tempDir('berth-dkapps-');
const key = `dkapps${run}`;
const logs = new LogStore(root);
const asRoot = process.getuid?.() === 0;
let driver: DockerDriver;
const projects = [`prj_a${run}`, `prj_b${run}`, `prj_c${run}`, `prj_d${run}`, `prj_e${run}`];

/** Answers GET / with who it is, /connect/<host>/<port> with whether a TCP connection opens, /dns/<name>, /data/<n> (write then read), /crash. */
const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const net = require('node:net');
const dns = require('node:dns');
const status = () => Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').filter((l) => /^(CapEff|CapPrm|NoNewPrivs):/.test(l)).map((l) => l.split(/:\\s+/)));
http.createServer((req, res) => {
  const [, verb, a, b] = req.url.split('/');
  const json = (v) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(v)); };
  if (verb === 'connect') {
    const s = net.connect({ host: a, port: Number(b) });
    s.setTimeout(1500, () => { s.destroy(); json({ ok: false, why: 'timeout' }); });
    s.once('connect', () => { s.destroy(); json({ ok: true }); });
    s.once('error', (e) => json({ ok: false, why: e.code }));
    return;
  }
  if (verb === 'dns') { dns.lookup(a, (err, addr) => json(err ? { ok: false, why: err.code } : { ok: true, addr })); return; }
  if (verb === 'data') {
    const f = process.env.DATA_DIR + '/count';
    const n = (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1;
    fs.writeFileSync(f, String(n));
    json({ n }); return;
  }
  if (verb === 'crash') { res.end('bye'); setTimeout(() => process.exit(3), 10); return; }
  json({ uid: process.getuid(), gid: process.getgid(), cwd: process.cwd(), env: { PORT: process.env.PORT, HOST: process.env.HOST, DATA_DIR: process.env.DATA_DIR, HOME: process.env.HOME, PATH: process.env.PATH, GREETING: process.env.GREETING, SERVER_SECRET: process.env.SERVER_SECRET, BERTH_DEPLOYMENT_ID: process.env.BERTH_DEPLOYMENT_ID }, status: status() });
}).listen(Number(process.env.PORT), process.env.HOST, () => console.log('listening on ' + process.env.PORT + ' token ' + process.env.API_TOKEN));
process.on('SIGTERM', () => process.exit(0));
`;

function docker(args: string[], input?: string): string {
  const r = spawnSync(DOCKER, args, { encoding: 'utf8', input, timeout: 120_000 });
  assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

before(async () => {
  if (noEngine) return;
  const script = spawnSync('bash', [path.resolve('scripts/docker-base-images.sh')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(script.status, 0, script.stderr);
  const ctxDir = path.join(root, 'image');
  spawnSync('mkdir', ['-p', path.join(ctxDir, 'sub')]);
  writeFileSync(path.join(ctxDir, 'server.js'), SERVER);
  writeFileSync(path.join(ctxDir, 'sub', 'marker'), 'sub');
  // A Dockerfile image: its own CMD and WORKDIR, and the plan layout (/app) for start commands.
  writeFileSync(path.join(ctxDir, 'Dockerfile'), `FROM ${BASE_IMAGE}\nCOPY . /app\nWORKDIR /app\nCMD ["node", "/app/server.js"]\n`);
  docker(['build', '-q', '-t', IMAGE, ctxDir]);
  driver = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_NODE: BASE_IMAGE } });
  await driver.reclaim();
});

after(async () => {
  if (!noEngine) {
    const list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key }) });
    for (const c of list) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    for (const p of projects) await engine.api.getNetwork(`berth-${key}-${p}`).remove().catch(() => {});
    await engine.api.getImage(IMAGE).remove({ force: true }).catch(() => {});
  }
  logs.closeAll();
  rmSync(root, { recursive: true, force: true });
});

let seq = 0;
function deps(extra: Partial<InstanceDeps> = {}): InstanceDeps {
  return {
    logs,
    driver,
    baseEnv: { PATH: '/root/host/bin:/usr/bin', LANG: 'C.UTF-8', NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' },
    healthTimeoutMs: 15000,
    graceMs: 2000,
    boxName: (p) => `app-${p}-${++seq}`,
    ...extra,
  };
}

function spec(projectId: string, extra: Partial<ReleaseSpec> = {}): ReleaseSpec {
  return {
    projectId,
    orgId: 'org_test',
    deploymentId: `dpl_${projectId}_1`,
    appRoot: path.join(root, 'release', projectId),
    cwd: path.join(root, 'release', projectId),
    steps: (env) => parseCommand('node /app/server.js', env),
    env: { GREETING: 'hi', API_TOKEN: 'tok-very-secret-123' },
    secrets: ['tok-very-secret-123'],
    dataDir: path.join(root, 'volumes', projectId, 'data'),
    limits: { cpuCores: 0.5, memoryMb: 128, pidsMax: 64 },
    identity: null,
    port: 3000,
    path: () => '/host/path/never/used',
    image: IMAGE,
    ...extra,
  };
}

function get(inst: Instance, urlPath: string): Promise<any> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: inst.upstream.host, port: inst.upstream.port, path: urlPath, timeout: 5000 }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(res.headers['content-type'] === 'application/json' ? JSON.parse(body) : body));
      })
      .on('error', reject);
  });
}

async function containersOf(projectId: string, all = true): Promise<Docker.ContainerInfo[]> {
  return engine.api.listContainers({ all, filters: labelFilter({ 'berth.instance': key, 'berth.project': projectId }) });
}

function runtimeLog(projectId: string): string {
  const f = logs.runtime(projectId).file;
  if (!existsSync(f)) return '';
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { line: string }).line)
    .join('\n');
}

test('an app container answers its health check at its address on the project network, as uid 1000 with no capabilities and the limits', withEngine, async () => {
  const [p] = projects;
  const inst = await driver.apps.start(spec(p!), deps());
  try {
    assert.match(inst.upstream.host, /^\d+\.\d+\.\d+\.\d+$/);
    assert.equal(inst.upstream.key, `${inst.upstream.host}:3000`);
    assert.ok(inst.pid && inst.pid > 1);
    const me = await get(inst, '/');
    assert.equal(me.uid, 1000);
    assert.equal(me.gid, 1000);
    assert.equal(me.status.CapEff, '0000000000000000');
    assert.equal(me.status.CapPrm, '0000000000000000');
    assert.equal(me.status.NoNewPrivs, '1');
    // Exactly what Berth passes: the image's PATH (no host folder), no host CA path, DATA_DIR, HOST, HOME.
    assert.equal(me.env.PORT, '3000');
    assert.equal(me.env.HOST, '0.0.0.0');
    assert.equal(me.env.DATA_DIR, '/data');
    assert.equal(me.env.HOME, '/tmp');
    assert.equal(me.env.GREETING, 'hi');
    assert.equal(me.env.BERTH_DEPLOYMENT_ID, `dpl_${p}_1`);
    assert.ok(me.env.PATH.startsWith('/app/.venv/bin:/app/node_modules/.bin:/app/.berth-toolchain/bin:'), me.env.PATH);
    assert.ok(me.env.PATH.endsWith(':/usr/local/bin:/usr/bin:/bin'), me.env.PATH);
    assert.doesNotMatch(me.env.PATH, /host/);

    const [c] = await containersOf(p!);
    assert.equal(c!.Names[0], `/berth-${key}-${p}-${seq}`);
    assert.deepEqual(
      { instance: c!.Labels['berth.instance'], project: c!.Labels['berth.project'], kind: c!.Labels['berth.kind'], deployment: c!.Labels['berth.deployment'] },
      { instance: key, project: p, kind: 'app', deployment: `dpl_${p}_1` },
    );
    const info = await engine.api.getContainer(c!.Id).inspect();
    assert.equal(info.HostConfig.Memory, 128 * 1024 * 1024);
    assert.equal(info.HostConfig.MemorySwap, 128 * 1024 * 1024);
    assert.equal(info.HostConfig.NanoCpus, 0.5e9);
    assert.equal(info.HostConfig.PidsLimit, 64);
    assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
    assert.deepEqual(info.HostConfig.SecurityOpt, ['no-new-privileges']);
    assert.equal(info.HostConfig.Privileged, false);
    assert.equal(info.HostConfig.RestartPolicy?.Name, 'no');
    assert.deepEqual(info.HostConfig.Binds, [`${spec(p!).dataDir}:/data:rw`]);
    assert.equal(info.Config.Env.some((e) => e.startsWith('NODE_EXTRA_CA_CERTS=')), false);
    assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [`berth-${key}-${p}`]);
    const network = await engine.api.getNetwork(`berth-${key}-${p}`).inspect();
    assert.equal(network.Options?.['com.docker.network.bridge.name'], bridgeName(key, p!));
    assert.match(bridgeName(key, p!), /^bbr[0-9a-f]{12}$/);

    // Output goes into the runtime log, line by line, secrets redacted.
    const log = await waitFor(() => (/listening on 3000/.test(runtimeLog(p!)) ? runtimeLog(p!) : null), 'the start line in the runtime log');
    assert.match(log, /listening on 3000 token \*{8}/);
    assert.doesNotMatch(log, /tok-very-secret-123/);
    assert.match(log, /\[berth\] starting dpl_\w+ in the container berth-/);
    if (asRoot) assert.equal(statSync(spec(p!).dataDir).uid, 1000);
  } finally {
    await stopInstance(inst, 2000);
  }
  assert.equal((await containersOf(p!)).length, 0, 'the stopped container is removed');
});

test('/data is kept across containers of the project, and a plan release runs its start steps first in one-off containers from its folder', withEngine, async () => {
  const p = projects[0]!;
  const first = await driver.apps.start(spec(p, { deploymentId: `dpl_${p}_2` }), deps());
  try {
    assert.deepEqual(await get(first, '/data'), { n: 1 });
    assert.deepEqual(await get(first, '/data'), { n: 2 });
  } finally {
    await stopInstance(first, 2000);
  }
  const rootDir = spec(p).appRoot;
  const second = await driver.apps.start(
    spec(p, {
      deploymentId: `dpl_${p}_3`,
      cwd: path.join(rootDir, 'sub'),
      steps: (env) => parseCommand('node -e "require(\'fs\').writeFileSync(process.env.DATA_DIR + \'/migrated\', require(\'fs\').readFileSync(\'marker\', \'utf8\')); console.log(\'migrating \' + process.env.API_TOKEN)" && node /app/server.js', env),
    }),
    deps(),
  );
  try {
    assert.deepEqual(await get(second, '/data'), { n: 3 });
    const me = await get(second, '/');
    assert.equal(me.cwd, '/app/sub');
    assert.ok(me.env.PATH.startsWith('/app/sub/.venv/bin:/app/sub/node_modules/.bin:/app/node_modules/.bin:'), me.env.PATH);
    assert.equal(readFileSync(path.join(spec(p).dataDir, 'migrated'), 'utf8'), 'sub');
    assert.match(runtimeLog(p), /migrating \*{8}/);
    const left = await containersOf(p);
    assert.deepEqual(
      left.map((c) => c.Labels['berth.kind']),
      ['app'],
      'the step container is gone',
    );
  } finally {
    await stopInstance(second, 2000);
  }
});

test('two projects cannot reach each other, the host reaches both, and an app cannot reach a port the host listens on', withEngine, async () => {
  const [, pb, pc] = projects;
  const b = await driver.apps.start(spec(pb!), deps());
  const c = await driver.apps.start(spec(pc!), deps());
  const hostServer = net.createServer((s) => s.end('host'));
  await new Promise<void>((r) => hostServer.listen(0, '0.0.0.0', r));
  try {
    assert.equal((await get(b, '/')).uid, 1000);
    assert.equal((await get(c, '/')).uid, 1000);
    assert.notEqual(b.upstream.host, c.upstream.host);
    const [fromB, fromC] = await Promise.all([get(b, `/connect/${c.upstream.host}/3000`), get(c, `/connect/${b.upstream.host}/3000`)]);
    assert.equal(fromB.ok, false, 'b reaches c');
    assert.equal(fromC.ok, false, 'c reaches b');
    // Sanity: a connection inside the container's own network works.
    assert.deepEqual(await get(b, `/connect/${b.upstream.host}/3000`), { ok: true });
    // DNS resolves inside (the engine's resolver in the container's namespace).
    const dns = await get(b, '/dns/registry.npmjs.org');
    const hostResolves = spawnSync('getent', ['hosts', 'registry.npmjs.org']).status === 0;
    if (hostResolves) assert.equal(dns.ok, true, JSON.stringify(dns));
    if (driver.ctx!.networks.hostRulesApply) {
      const gateway = (await engine.api.getNetwork(`berth-${key}-${pb}`).inspect()).IPAM!.Config![0]!.Gateway as string;
      const port = (hostServer.address() as net.AddressInfo).port;
      const toHost = await get(b, `/connect/${gateway}/${port}`);
      assert.equal(toHost.ok, false, 'the app reaches the host');
    } else {
      console.log('# the host rules need root and nftables: the host-port check is skipped');
    }
  } finally {
    hostServer.close();
    await Promise.all([stopInstance(b, 2000), stopInstance(c, 2000)]);
  }
});

test('a crash resolves exited, and the exited container is removed', withEngine, async () => {
  const p = projects[3]!;
  const inst = await driver.apps.start(spec(p), deps());
  assert.equal(await get(inst, '/crash'), 'bye');
  const r = await inst.exited;
  assert.deepEqual(r, { code: 3, signal: null });
  await waitFor(async () => ((await containersOf(p)).length === 0 ? true : null), 'the crashed container removed');
});

test('the supervisor replaces a crashed container with a new one, and lets containers run on at shutdown', withEngine, async () => {
  const p = projects[3]!;
  const sup = new Supervisor({ logs, driver, log: createLogger('silent'), baseEnv: { LANG: 'C.UTF-8' }, healthTimeoutMs: 15000, graceMs: 2000 });
  await sup.deploy(spec(p, { deploymentId: `dpl_${p}_sup` }));
  const first = sup.upstreamNow(p)!;
  const [before] = await containersOf(p);
  await new Promise((r) => http.get({ host: first.host, port: first.port, path: '/crash' }, r));
  const snap = await waitFor(() => {
    const s = sup.snapshot(p);
    return s?.state === 'running' && s.restarts === 1 ? s : null;
  }, 'the restart');
  assert.equal(snap.deploymentId, `dpl_${p}_sup`);
  const now = await containersOf(p);
  assert.equal(now.length, 1);
  assert.notEqual(now[0]!.Id, before!.Id);
  await sup.stopAll();
  assert.equal((await containersOf(p, false)).length, 1, 'still running after the shutdown');
  await engine.api.getContainer(now[0]!.Id).remove({ force: true });
});

test('an app that never answers is stopped and removed, and the start fails saying why', withEngine, async () => {
  const p = projects[3]!;
  await assert.rejects(
    driver.apps.start(spec(p, { deploymentId: `dpl_${p}_sleep`, steps: () => [{ argv: ['sleep', '30'], env: {} }] }), deps({ healthTimeoutMs: 1500 })),
    (e: Error) => e instanceof StartError && /did not become healthy: it did not answer on port 3000/.test(e.message),
  );
  assert.equal((await containersOf(p)).length, 0);
  await assert.rejects(
    driver.apps.start(spec(p, { deploymentId: `dpl_${p}_step`, steps: (env) => parseCommand('sh -c "exit 4" && node /app/server.js', env) }), deps()),
    (e: Error) => e instanceof StartError && e.message === 'start step "sh" exited with code 4',
  );
  assert.equal((await containersOf(p)).length, 0);
  assert.match(runtimeLog(p), /\[berth\] start step "sh" exited with code 4/);
});

test("a Dockerfile image runs its own CMD and WORKDIR as the image's user (named, resolved from its /etc/passwd for /data); a plan release as the project's identity", withEngine, async () => {
  const p = projects[3]!;
  const identity = { uid: 201234, gid: 201234 };
  const dataDir = path.join(root, 'volumes', p, 'image-data');
  const inst = await driver.apps.start(spec(p, { deploymentId: `dpl_${p}_img`, imageCommand: true, identity, dataDir, steps: () => assert.fail('no steps for an image command') }), deps());
  try {
    const me = await get(inst, '/');
    assert.equal(me.uid, 1000, 'USER app of the image');
    assert.equal(me.cwd, '/app');
    assert.equal(me.env.PATH, '/usr/local/bin:/usr/bin:/bin', 'the image PATH');
    assert.equal(me.env.HOME, '/home/app', "the image's HOME");
    assert.equal(me.env.DATA_DIR, '/data');
    assert.deepEqual(await get(inst, '/data'), { n: 1 });
    if (asRoot) assert.equal(statSync(dataDir).uid, 1000);
  } finally {
    await stopInstance(inst, 2000);
  }
  const own = await driver.apps.start(spec(p, { deploymentId: `dpl_${p}_own`, identity }), deps());
  try {
    const me = await get(own, '/');
    assert.deepEqual([me.uid, me.gid], [201234, 201234]);
    assert.equal(me.status.CapEff, '0000000000000000');
    if (asRoot) assert.equal(statSync(spec(p).dataDir).uid, 201234);
    assert.equal((await get(own, '/data')).n > 0, true, 'the volume is writable for the project');
  } finally {
    await stopInstance(own, 2000);
  }
});

test('a second runner of the same server adopts the running container of a deployment instead of starting another, and sweeps the rest', withEngine, async () => {
  const [, , , , pe] = projects;
  const pa = projects[0]!;
  const kept = await driver.apps.start(spec(pe!), deps());
  const other = await driver.apps.start(spec(pa, { deploymentId: `dpl_${pa}_old` }), deps());
  kept.detach!();
  other.detach!();
  const [before] = await containersOf(pe!);

  // The server restarts: a new driver (same data dir, same key) starts the same release.
  const again = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_NODE: BASE_IMAGE } });
  await again.reclaim();
  assert.equal((await containersOf(pe!)).length, 1, 'reclaim leaves running apps');
  const adopted = await again.apps.start(spec(pe!), deps({ driver: again }));
  try {
    const now = await containersOf(pe!);
    assert.equal(now.length, 1, 'no second copy');
    assert.equal(now[0]!.Id, before!.Id);
    assert.equal(adopted.upstream.host, kept.upstream.host);
    assert.match(runtimeLog(pe!), /\[berth\] adopted the running container berth-/);
    // Its output reaches the runtime log from now on.
    await get(adopted, '/dns/localhost');
    await again.apps.sweepUnadopted();
    assert.equal((await containersOf(pa)).length, 0, 'the unadopted container is removed');
    assert.equal((await containersOf(pe!)).length, 1, 'the adopted one stays');
    assert.equal((await get(adopted, '/')).uid, 1000);
  } finally {
    await stopInstance(adopted, 2000);
  }
  const r = await adopted.exited;
  assert.equal(r.code === 0 || r.signal !== null, true);
});

test('forgetting a project removes its containers and its network', withEngine, async () => {
  const p = projects[4]!;
  const inst = await driver.apps.start(spec(p), deps());
  inst.detach!();
  await driver.apps.forgetProject!(p);
  assert.equal((await containersOf(p)).length, 0);
  await assert.rejects(engine.api.getNetwork(`berth-${key}-${p}`).inspect(), /no such network|not found/i);
});
