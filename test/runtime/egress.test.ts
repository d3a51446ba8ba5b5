// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * Egress on real hosts (contract 18, issue 32): sandboxed builds reach the npm registry on a host
 * whose other firewalls drop forwarded traffic (CI runs dockerd, whose iptables FORWARD policy is
 * DROP); GET /api/health answers runtime.egress; an install whose registry the box cannot reach,
 * while the server can, fails at once naming the host and the cause.
 *
 * The unreachable registry is an address this test puts on the machine: a network namespace holding
 * 198.51.100.2 behind a veth pair, and a table of its own whose forward chain drops what goes there
 * (what Docker's FORWARD DROP does to everything a box sends when Berth's rules are missing). The
 * server reaches it (its traffic is output, not forwarded); a box does not.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '20';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { HostFirewall } from '../../src/runtime/host-firewall.js';
import { boxResolvConf } from '../../src/runtime/netns.js';

const asRoot = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;
const iptables = spawnSync('iptables', ['-w', '-S', 'FORWARD'], { encoding: 'utf8' });
const NS = `berth-egress-test-${process.pid}`;
const VETH = `bet${process.pid % 100000}`;

function sh(bin: string, args: string[], input?: string): void {
  const r = spawnSync(bin, args, { input, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')}: ${r.stderr}`);
}

let root: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;

async function projectFrom(dir: string, name: string): Promise<{ id: string; slug: string }> {
  const created = await api.post('/api/projects', { name });
  assert.equal(created.status, 201, created.text);
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: dir }).where('id', '=', created.body.data.id).execute();
  return { id: created.body.data.id, slug: created.body.data.slug };
}

async function buildLog(id: string): Promise<string> {
  const logs = await api.get(`/api/deployments/${id}/logs`);
  return (logs.body.data as { line: string }[]).map((l) => l.line).join('\n');
}

describe('egress on a host that also runs Docker', { skip: !asRoot && 'needs root and bubblewrap (the sandbox runtime as root)' }, () => {
  before(async () => {
    root = tempDir('berth-egress-');
    mkdirSync(path.join(root, 'local'), { recursive: true });
    server = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_RUNTIME: 'sandbox' } });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
    api = server.api(owner.token);
  });

  after(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('a sandboxed build installs a real dependency from the npm registry and the app serves it', async () => {
    const dir = path.join(root, 'local', 'with-dep');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'with-dep', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { ms: '2.1.3' } }),
    );
    writeFileSync(path.join(dir, 'server.js'), "const ms = require('ms');\nrequire('http').createServer((q, r) => r.end('two days is ' + ms('2 days') + ' ms')).listen(Number(process.env.PORT));\n");
    const p = await projectFrom(dir, 'With Dep');
    const d = await api.post('/api/deployments', { projectId: p.id });
    assert.equal(d.status, 202, d.text);
    const done = await waitForDeployment(api, d.body.data.id, 240_000);
    assert.equal(done.status, 'ready', `${done.error}\n${await buildLog(done.id)}`);
    const res = await edgeRequest(getRuntime(server.ctx).edgePort(), `${p.slug}.localhost`, '/');
    assert.equal(res.status, 200);
    assert.equal(res.text, 'two days is 172800000 ms');
    assert.match(await buildLog(done.id), /install: npm (install|ci)/);
  });

  test('GET /api/health answers runtime.egress from a check inside a box', async () => {
    const health = await waitFor(
      async () => {
        const r = await server.api().get('/api/health');
        return r.body.data.runtime.egress ? r.body.data.runtime : null;
      },
      'the first egress check',
      30_000,
      200,
    );
    assert.equal(health.egress.ok, true, health.egress.error);
    assert.ok(!Number.isNaN(Date.parse(health.egress.checkedAt)));
  });

  test("Berth's rules sit where Docker looks first, in a chain of their own", { skip: (iptables.status !== 0 || !/DOCKER-USER/.test(iptables.stdout)) && 'no Docker Engine on this host' }, () => {
    const user = spawnSync('iptables', ['-w', '-S', 'DOCKER-USER'], { encoding: 'utf8' }).stdout;
    assert.match(user, /-A DOCKER-USER -j BERTH-FORWARD/);
    const own = spawnSync('iptables', ['-w', '-S', 'BERTH-FORWARD'], { encoding: 'utf8' }).stdout;
    assert.match(own, /-A BERTH-FORWARD -i bth\+ -j ACCEPT/);
  });

  describe('a registry the box cannot reach while the server can', () => {
    let reg: ChildProcess | null = null;

    /** A project whose install uses the registry at `url` (the fake one in the namespace). */
    async function deployWithRegistry(name: string, url: string): Promise<any> {
      const dir = path.join(root, 'local', name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { ms: '2.1.3' } }));
      writeFileSync(path.join(dir, 'server.js'), "require('http').createServer((q, r) => r.end('x')).listen(Number(process.env.PORT));\n");
      const p = await projectFrom(dir, name);
      const env = await api.patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts: [{ key: 'npm_config_registry', value: url, isSecret: false }], deletes: [] });
      assert.equal(env.status, 200, env.text);
      const d = await api.post('/api/deployments', { projectId: p.id });
      assert.equal(d.status, 202, d.text);
      return waitForDeployment(api, d.body.data.id, 60_000);
    }

    before(async () => {
      sh('ip', ['netns', 'add', NS]);
      sh('ip', ['link', 'add', VETH, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', NS]);
      sh('ip', ['addr', 'add', '198.51.100.1/30', 'dev', VETH]);
      sh('ip', ['addr', 'add', '10.213.0.1/30', 'dev', VETH]);
      sh('ip', ['link', 'set', VETH, 'up']);
      sh('ip', ['-n', NS, 'addr', 'add', '198.51.100.2/30', 'dev', 'eth0']);
      sh('ip', ['-n', NS, 'addr', 'add', '10.213.0.2/30', 'dev', 'eth0']);
      sh('ip', ['-n', NS, 'link', 'set', 'eth0', 'up']);
      sh('ip', ['-n', NS, 'link', 'set', 'lo', 'up']);
      // The fake registry: accepts TCP on 443 inside the namespace (the server reaches it).
      reg = spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', "require('net').createServer((s) => s.end()).listen(443, '0.0.0.0', () => console.log('up'))"], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve, reject) => {
        reg!.stdout!.once('data', () => resolve());
        reg!.once('exit', (c) => reject(new Error(`the fake registry exited ${c}`)));
      });
      // Another firewall of the host: drops what is forwarded to the registry (only there, so that the
      // suites running beside this one keep their way out).
      sh('nft', ['-f', '-'], `table inet ${NS.replace(/-/g, '_')} {\n  chain forward {\n    type filter hook forward priority 0; policy accept;\n    ip daddr 198.51.100.2 drop\n  }\n}\n`);
    });

    after(() => {
      reg?.kill('SIGKILL');
      spawnSync('nft', ['delete', 'table', 'inet', NS.replace(/-/g, '_')]);
      spawnSync('ip', ['netns', 'delete', NS]);
      spawnSync('ip', ['link', 'delete', VETH]);
    });

    test('the install fails at once, naming the registry and the firewall, instead of waiting out the build timeout', async () => {
      const done = await deployWithRegistry('blocked', 'https://198.51.100.2/');
      assert.equal(done.status, 'failed');
      assert.match(done.error, /cannot reach 198\.51\.100\.2:443 \(the npm registry\)/);
      assert.match(done.error, /another firewall drops forwarded traffic/);
      assert.match(done.error, /docs\/runtime\.md/);
      // The install itself never ran (the log may say why no install was reused, nothing more).
      assert.doesNotMatch(await buildLog(done.id), /\[berth\] install: (?!not reused: )/);
    });

    test('a private address the server reaches stays out of reach of a box, and the error says why', async () => {
      const done = await deployWithRegistry('private', 'https://10.213.0.2/');
      assert.equal(done.status, 'failed');
      assert.match(done.error, /cannot reach 10\.213\.0\.2:443/);
      assert.match(done.error, /private, link-local or host address/);
      assert.match(done.error, /BERTH_OUTBOUND_ALLOW/);
    });
  });
});

describe('the host firewall shim', { skip: (!asRoot || iptables.status !== 0) && 'needs root and iptables' }, () => {
  test('adds its chain and jump once however often it is ensured, and removes every trace', async () => {
    const fw = new HostFirewall({ firewallCmd: null, chain: 'BERTH-TEST-FWD' });
    try {
      await fw.ensure();
      const report = await fw.ensure();
      assert.equal(report.problems.length, 0, report.problems.join('; '));
      const where = report.shims[0]!.split(':')[1]!;
      const jumps = spawnSync('iptables', ['-w', '-S', where], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.includes('-j BERTH-TEST-FWD'));
      assert.equal(jumps.length, 1);
      assert.equal(spawnSync('iptables', ['-w', '-S', 'BERTH-TEST-FWD'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith('-A')).length, 2);
    } finally {
      await fw.remove();
    }
    assert.notEqual(spawnSync('iptables', ['-w', '-S', 'BERTH-TEST-FWD']).status, 0);
    assert.doesNotMatch(spawnSync('iptables', ['-w', '-S'], { encoding: 'utf8' }).stdout, /BERTH-TEST-FWD/);
  });
});

describe("a box's resolver", () => {
  test("is the host's own file when its nameservers are reachable from a box", () => {
    const dir = tempDir('berth-resolv-');
    writeFileSync(path.join(dir, 'etc'), 'nameserver 10.255.255.53\n');
    assert.equal(boxResolvConf({ etc: path.join(dir, 'etc'), resolved: path.join(dir, 'none'), out: path.join(dir, 'out') }), null);
    rmSync(dir, { recursive: true, force: true });
  });

  test("is systemd-resolved's upstream servers when the host's resolver listens on its loopback", () => {
    const dir = tempDir('berth-resolv-');
    writeFileSync(path.join(dir, 'etc'), 'nameserver 127.0.0.53\noptions edns0\nsearch example.internal\n');
    writeFileSync(path.join(dir, 'resolved'), 'nameserver 192.0.2.10\nnameserver 127.0.0.1\nnameserver 192.0.2.11\n');
    const out = boxResolvConf({ etc: path.join(dir, 'etc'), resolved: path.join(dir, 'resolved'), out: path.join(dir, 'out') });
    assert.equal(out, path.join(dir, 'out'));
    const text = readFileSync(out!, 'utf8');
    assert.match(text, /^nameserver 192\.0\.2\.10$/m);
    assert.match(text, /^nameserver 192\.0\.2\.11$/m);
    assert.doesNotMatch(text, /127\.0\.0/);
    assert.match(text, /^search example\.internal$/m);
    rmSync(dir, { recursive: true, force: true });
  });
});
