// @store-independent: the sandbox's launchers, the same on either store.
/**
 * Launchers started ahead of need (src/runtime/spare-launchers.ts): when an app box with a port goes,
 * the spare namespace made for that port gets a launcher for the command that box ran, waiting for its
 * arguments; the next box with that port that starts the same command is started by it (the mounts, the
 * environment and the seccomp filter still come at that moment), any other command kills it, and a
 * launcher that never gets its arguments cannot run anything.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { startLauncher } from '../../src/runtime/box-process.js';
import { createDriver } from '../../src/runtime/drivers.js';
import type { Box, BoxSpec, RuntimeDriver } from '../../src/runtime/driver.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

const ready = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;
const skip = !ready && 'needs root and bubblewrap (the sandbox driver as the server runs it in production)';

/** Pids of the processes whose command line contains `needle`. */
function pidsRunning(needle: string): number[] {
  const found: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').includes(needle)) found.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return found;
}

async function output(box: Box, argv: string[], env: Record<string, string>, cwd: string): Promise<{ pid: number | undefined; code: number | null; out: string }> {
  const p = box.exec(argv, { cwd, env });
  let out = '';
  p.stdout?.on('data', (c) => (out += c));
  p.stderr?.on('data', (c) => (out += c));
  const r = await p.exited;
  return { pid: p.pid, code: r.code, out };
}

describe('a launcher started ahead of need', { skip }, () => {
  let root: string;
  let driver: RuntimeDriver;
  const uid = 264000 + (process.pid % 10000);
  const port = 3917;
  let spec: BoxSpec;
  const marker = `spare-launcher-${process.pid}`;
  const argv = ['/bin/sh', '-c', 'echo "$GREETING from $$"', marker];

  before(async () => {
    root = tempDir('berth-spare-launch-');
    const app = path.join(root, 'app');
    mkdirSync(app, { recursive: true });
    chownSync(app, uid, uid);
    driver = createDriver('sandbox', path.join(root, 'data'));
    assert.deepEqual(driver.status(), { driver: 'sandbox', ready: true });
    await driver.reclaim();
    spec = { kind: 'app', port, projectId: 'prj_sparelaunch', name: `sparelaunch-${process.pid}`, identity: { uid, gid: uid }, limits: { cpuCores: 1, memoryMb: 256 }, appDir: app };
  });

  after(async () => {
    await driver?.close?.();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test('waits in the spare namespace with the command the app box ran, and starts that command in the next box with the new environment', async () => {
    const first = await driver.open({ ...spec, name: `${spec.name}-1` });
    const a = await output(first, argv, { PATH: '/usr/bin:/bin', GREETING: 'hello' }, path.join(root, 'app'));
    assert.equal(a.code, 0, a.out);
    assert.match(a.out, /^hello from \d+/);
    await first.dispose();

    // The launcher is bwrap (nsenter exec'd into it), waiting on fd 4 with the box's command after `--`.
    await waitFor(() => pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`).length === 1, 'a waiting launcher', 20000);
    const [waiting] = pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`);
    assert.ok(readFileSync(`/proc/${waiting}/cmdline`, 'utf8').includes(marker));

    const second = await driver.open({ ...spec, name: `${spec.name}-2` });
    try {
      const b = await output(second, argv, { PATH: '/usr/bin:/bin', GREETING: 'welcome back' }, path.join(root, 'app'));
      assert.equal(b.code, 0, b.out);
      assert.equal(b.pid, waiting, 'the box was started by the waiting launcher');
      assert.match(b.out, /^welcome back from \d+/, 'the environment is the one given now');
    } finally {
      await second.dispose();
    }
  });

  test('another command in that namespace is started by a launcher of its own, and the waiting one is killed', async () => {
    await waitFor(() => pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`).length === 1, 'a waiting launcher', 20000);
    const [waiting] = pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`);
    const box = await driver.open({ ...spec, name: `${spec.name}-3` });
    try {
      const r = await output(box, ['/bin/echo', 'something else'], { PATH: '/usr/bin:/bin' }, path.join(root, 'app'));
      assert.equal(r.code, 0, r.out);
      assert.equal(r.out.trim(), 'something else');
      assert.notEqual(r.pid, waiting);
      await waitFor(() => !pidsRunning(marker).includes(waiting!), 'the unused launcher gone', 5000);
    } finally {
      await box.dispose();
    }
  });

  test('no launcher is made for a command that carries the loader\'s variables (no value of the environment waits in a command line)', async () => {
    const quiet = `spare-launcher-loader-${process.pid}`;
    const withLoader = ['/bin/sh', '-c', 'echo "$LD_BIND_NOW"', quiet];
    const other = { ...spec, port: port + 1 };
    const first = await driver.open({ ...other, name: `${spec.name}-4` });
    const a = await output(first, withLoader, { PATH: '/usr/bin:/bin', LD_BIND_NOW: '1' }, path.join(root, 'app'));
    assert.equal(a.code, 0, a.out);
    assert.equal(a.out.trim(), '1');
    await first.dispose();
    // The next box with that port gets the spare made after the release (a spare still being made is
    // waited for): a launcher would be in it by now.
    const second = await driver.open({ ...other, name: `${spec.name}-5` });
    try {
      assert.deepEqual(pidsRunning(quiet), [], 'no launcher waits with the command');
    } finally {
      await second.dispose();
    }
  });

  test('closing the driver leaves no launcher waiting', async () => {
    await waitFor(() => pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`).length === 1, 'a waiting launcher', 20000);
    await driver.close?.();
    await waitFor(() => pidsRunning(`bwrap --args 4 -- /usr/bin/setpriv --reuid=${uid}`).length === 0, 'no launcher left', 5000);
  });

  test('a launcher that never gets its arguments runs nothing (bwrap builds an empty root and cannot exec)', async () => {
    const l = startLauncher(['bwrap', '--args', '4', '--', '/bin/sh', '-c', 'echo escaped'], '/', {}, 2);
    const p = l.feed([Buffer.alloc(0), Buffer.alloc(0)]);
    let out = '';
    p.stdout?.on('data', (c) => (out += c));
    p.stderr?.on('data', (c) => (out += c));
    const r = await p.exited;
    assert.notEqual(r.code, 0);
    assert.doesNotMatch(out, /escaped/);
    assert.match(out, /execvp \/bin\/sh: No such file or directory/);
  });
});
