// A project's environment in a sandbox box: it reaches the command whole, and none of it acts in the
// launcher's processes (nsenter, bwrap, setpriv), which run as root. The variables glibc's loader obeys in
// a program that is not setuid (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, GCONV_PATH, ...) would otherwise
// run a project's own code as root before setpriv drops to the project's uid.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Box } from '../../src/runtime/driver.js';
import { splitBoxEnv } from '../../src/runtime/box-env.js';
import { openSandboxBox, type SandboxBoxFixture } from './box-fixture.js';

describe('splitting a box environment', () => {
  test('the loader\'s variables go to the command after the uid switch; the rest to bwrap', () => {
    const s = splitBoxEnv({ PATH: '/usr/bin:/bin', LD_PRELOAD: '/app/libjemalloc.so', SECRET: 'a b=c\nd', GCONV_PATH: '/app/g', MALLOC_ARENA_MAX: '2', GLIBC_TUNABLES: 'glibc.malloc.check=3', TMPDIR: '/tmp/x' });
    assert.deepEqual(s.setenv, ['--setenv', 'PATH', '/usr/bin:/bin', '--setenv', 'SECRET', 'a b=c\nd']);
    assert.deepEqual(s.late, ['LD_PRELOAD=/app/libjemalloc.so', 'GCONV_PATH=/app/g', 'MALLOC_ARENA_MAX=2', 'GLIBC_TUNABLES=glibc.malloc.check=3', 'TMPDIR=/tmp/x']);
  });

  test('a name with "=" or a NUL, an empty name, or a value with a NUL is refused', () => {
    const bad: Record<string, string>[] = [{ 'A=B': 'x' }, { '': 'x' }, { 'A\0B': 'x' }, { A: 'x\0--bind\0/\0/host' }, { LD_PRELOAD: 'a\0b' }];
    for (const env of bad) {
      assert.throws(() => splitBoxEnv(env), /environment variable/, JSON.stringify(env));
    }
  });
});

const ready = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;
const skip = !ready && 'needs root and bubblewrap (the sandbox driver as the server runs it in production)';

describe('a project\'s environment inside a sandbox box', { skip }, () => {
  let root: string;
  let box: Box;
  let fixture: SandboxBoxFixture | undefined;
  const uid = 262000 + (process.pid % 10000);

  before(async () => {
    fixture = await openSandboxBox('berth-box-env-', uid, { kind: 'app', port: 3000, projectId: 'prj_boxenv', name: `boxenv-${process.pid}`, limits: { cpuCores: 1, memoryMb: 256 } });
    ({ root, box } = fixture);
  });

  after(async () => {
    await fixture?.close();
  });

  async function run(argv: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
    const p = box.exec(argv, { cwd: path.join(root, 'app'), env });
    let out = '';
    p.stdout?.on('data', (c) => (out += c));
    p.stderr?.on('data', (c) => (out += c));
    const r = await p.exited;
    return { code: r.code, out };
  }

  test('the command gets exactly the environment it was given, LD_PRELOAD and multi-line values included', async () => {
    const env = { PATH: '/usr/bin:/bin', HOME: '/home/berth', LD_LIBRARY_PATH: '/app/lib', MULTI: 'one\ntwo = three', EMPTY: '' };
    const r = await run(['/usr/bin/env', '-0'], env);
    assert.equal(r.code, 0, r.out);
    const got = Object.fromEntries(r.out.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    // bwrap sets PWD for its --chdir, as a shell would.
    assert.deepEqual(got, { ...env, PWD: '/app' });
  });

  test('the loader obeys LD_SHOW_AUXV only in processes that run as the project (never in root\'s nsenter, bwrap or setpriv)', async () => {
    const r = await run(['/bin/true'], { PATH: '/usr/bin:/bin', LD_SHOW_AUXV: '1' });
    assert.equal(r.code, 0, r.out);
    const uids = [...r.out.matchAll(/^AT_UID:\s+(\d+)/gm)].map((m) => Number(m[1]));
    const programs = [...r.out.matchAll(/^AT_EXECFN:\s+(\S+)/gm)].map((m) => m[1]);
    assert.ok(programs.includes('/bin/true'), r.out);
    for (const p of ['nsenter', 'bwrap', 'setpriv']) assert.ok(!programs.some((x) => x!.endsWith(`/${p}`)), `${p} obeyed LD_SHOW_AUXV:\n${r.out}`);
    assert.ok(uids.length > 0 && uids.every((u) => u === uid), r.out);
  });

  test('a preload that cannot be found is reported by the command, not by the launcher', async () => {
    const r = await run(['/bin/true'], { PATH: '/usr/bin:/bin', LD_PRELOAD: '/app/missing-preload.so' });
    assert.equal(r.code, 0, r.out);
    const complaints = r.out.split('\n').filter((l) => l.includes('missing-preload.so'));
    // Only /bin/true says it: nsenter, bwrap and setpriv never saw it, and `env` had it as an argument.
    assert.equal(complaints.length, 1, r.out);
  });
});
