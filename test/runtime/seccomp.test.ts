// The sandbox's seccomp filter (issue 33 point 2, contract section 18): the program's decisions, its
// syscall numbers against the kernel's own headers, and probes run inside a real sandbox box (root and
// bubblewrap), where the listed calls fail with EPERM and the toolchains still build and run.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Box } from '../../src/runtime/driver.js';
import { BPF, CLONE_NEW_FLAGS, SECCOMP_DENIED, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, auditArch, seccompArches, seccompFilter, syscallNumber } from '../../src/runtime/seccomp.js';
import { openSandboxBox, type SandboxBoxFixture } from './box-fixture.js';

/** Runs the filter's classic-BPF program over one `seccomp_data` (only the opcodes the generator emits). */
function decide(prog: Buffer, data: { arch: number; nr: number; args?: number[] }): string {
  const word = (off: number): number => {
    if (off === 0) return data.nr >>> 0;
    if (off === 4) return data.arch >>> 0;
    const i = (off - 16) / 8;
    assert.ok(Number.isInteger(i) && i >= 0 && i < 6, `load of offset ${off}`);
    return (data.args?.[i] ?? 0) >>> 0;
  };
  let acc = 0;
  for (let pc = 0; pc < prog.length / 8; pc++) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === BPF.LD_W_ABS) acc = word(k);
    else if (code === BPF.JEQ_K) pc += acc === k ? jt : jf;
    else if (code === BPF.JSET_K) pc += (acc & k) !== 0 ? jt : jf;
    else if (code === BPF.RET_K) {
      if (k === SECCOMP_RET_ALLOW) return 'allow';
      assert.equal(k & 0xffff0000, SECCOMP_RET_ERRNO, `return ${k.toString(16)}`);
      return ({ 1: 'EPERM', 38: 'ENOSYS' } as Record<number, string>)[k & 0xffff] ?? `errno ${k & 0xffff}`;
    } else assert.fail(`unexpected opcode ${code}`);
  }
  return assert.fail('the program ran off its end');
}

const SIGCHLD = 17;
const CLONE_VM_THREAD = 0x00000100 | 0x00000800 | 0x00010000 | 0x00040000 | 0x00080000 | 0x00100000 | 0x00200000; // pthread_create's flags
const NEW = { NEWNS: 0x00020000, NEWCGROUP: 0x02000000, NEWUTS: 0x04000000, NEWIPC: 0x08000000, NEWUSER: 0x10000000, NEWPID: 0x20000000, NEWNET: 0x40000000 };

for (const arch of seccompArches()) {
  describe(`the seccomp filter for ${arch}`, () => {
    const prog = seccompFilter(arch);
    const nr = (name: Parameters<typeof syscallNumber>[1]) => syscallNumber(arch, name);
    const own = auditArch(arch);

    test('is a whole number of sock_filter records, well under the kernel\'s 4096 instructions', () => {
      assert.equal(prog.length % 8, 0);
      assert.ok(prog.length / 8 < 200);
    });

    test('every call of contract 18 (and the new mount API, io_uring, setns) fails with EPERM', () => {
      for (const name of SECCOMP_DENIED) assert.equal(decide(prog, { arch: own, nr: nr(name) }), 'EPERM', name);
    });

    test('clone and unshare with any new-namespace flag fail with EPERM; without one they are allowed', () => {
      for (const [flag, bit] of Object.entries(NEW)) {
        assert.equal(decide(prog, { arch: own, nr: nr('clone'), args: [bit | SIGCHLD] }), 'EPERM', `clone ${flag}`);
        assert.equal(decide(prog, { arch: own, nr: nr('unshare'), args: [bit] }), 'EPERM', `unshare ${flag}`);
      }
      assert.equal(decide(prog, { arch: own, nr: nr('unshare'), args: [0x80] }), 'EPERM', 'unshare CLONE_NEWTIME');
      assert.equal(decide(prog, { arch: own, nr: nr('clone'), args: [SIGCHLD] }), 'allow', 'fork');
      assert.equal(decide(prog, { arch: own, nr: nr('clone'), args: [CLONE_VM_THREAD] }), 'allow', 'a thread');
      assert.equal(decide(prog, { arch: own, nr: nr('unshare'), args: [0x400] }), 'allow', 'unshare CLONE_FILES');
      assert.equal(CLONE_NEW_FLAGS, Object.values(NEW).reduce((a, b) => a | b, 0));
    });

    test('clone3 answers ENOSYS, so libc falls back to clone, whose flags the filter reads', () => {
      assert.equal(decide(prog, { arch: own, nr: nr('clone3') }), 'ENOSYS');
    });

    test('other calls are allowed; any other ABI (i386, x32, 32-bit ARM) fails with EPERM', () => {
      // read, write, close, getpid, execve, ptrace (the PID namespace already confines it), prctl
      const others = arch === 'x64' ? [0, 1, 3, 39, 59, 101, 157] : [63, 64, 57, 172, 221, 117, 167];
      for (const other of others) assert.equal(decide(prog, { arch: own, nr: other }), 'allow', `nr ${other}`);
      for (const foreign of [0x40000003 /* i386 */, 0x40000028 /* arm */, 0xc000003e, 0xc00000b7].filter((a) => a !== own)) {
        assert.equal(decide(prog, { arch: foreign, nr: 20 }), 'EPERM', `arch ${foreign.toString(16)}`);
      }
      if (arch === 'x64') assert.equal(decide(prog, { arch: own, nr: 0x40000000 | 39 }), 'EPERM', 'x32 getpid');
    });
  });
}

test('an arch without a syscall table has no filter, and says what to use instead', () => {
  assert.throws(() => seccompFilter('riscv64'), /no syscall table for riscv64.*BERTH_RUNTIME=docker/);
});

/** The kernel's own numbering (linux-libc-dev), when installed: the filter's tables must agree with it. */
function headerNumbers(file: string): Map<string, number> | null {
  if (!existsSync(file)) return null;
  const map = new Map<string, number>();
  for (const m of readFileSync(file, 'utf8').matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$/gm)) map.set(m[1]!, Number(m[2]));
  return map;
}
const HEADERS: Record<string, string> = { x64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h', arm64: '/usr/include/asm-generic/unistd.h' };

for (const [arch, file] of Object.entries(HEADERS)) {
  test(`the ${arch} syscall numbers are the kernel headers' (${file})`, { skip: !existsSync(file) && `${file} is not installed (linux-libc-dev)` }, () => {
    const h = headerNumbers(file)!;
    for (const name of [...SECCOMP_DENIED, 'clone', 'clone3', 'unshare'] as const) assert.equal(syscallNumber(arch, name), h.get(name), name);
  });
}

// ---- Inside a real box -------------------------------------------------------------------------

const ready = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0 && process.arch === 'x64';
const skip = !ready && 'needs root, bubblewrap and x86_64 (the sandbox driver as the server runs it in production)';

/**
 * Raw syscalls through python3's ctypes; answers `{ name: "ok" | "<errno name>" }`. A `clone` that
 * succeeds returns 0 in the child, which exits at once. Arguments are chosen so that, without the
 * filter, most calls answer something else than EPERM (EFAULT, EBADF, EINVAL or success).
 */
const PROBE = `
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for name, (nr, *args) in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r == 0 and name.startswith('clone'):
        os._exit(0)
    if r > 0 and name.startswith('clone'):
        os.waitpid(r, 0)
    out[name] = 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
print(json.dumps(out))
`;

/** getpid through the i386 ABI (`mov eax, 20; int 0x80; ret`) from a page of machine code. */
const I386_GETPID = `
import ctypes, errno, mmap
m = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))
r = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
print('ok' if r >= 0 else errno.errorcode.get(-r, str(-r)))
`;

describe('inside a sandbox box', { skip }, () => {
  let root: string;
  let box: Box;
  let fixture: SandboxBoxFixture | undefined;
  const uid = 260000 + (process.pid % 10000);

  before(async () => {
    fixture = await openSandboxBox('berth-seccomp-', uid, { kind: 'build', projectId: 'prj_seccomp', name: `seccomp-${process.pid}`, limits: { cpuCores: 1, memoryMb: 768 } });
    ({ root, box } = fixture);
  });

  after(async () => {
    await fixture?.close();
  });

  async function run(argv: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
    const p = box.exec(argv, { cwd: path.join(root, 'app'), env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/home/berth', ...env } });
    let out = '';
    p.stdout?.on('data', (c) => (out += c));
    p.stderr?.on('data', (c) => (out += c));
    const r = await p.exited;
    return { code: r.code, out: out.trim() };
  }

  test('the box runs under the filter (one seccomp filter in /proc/self/status)', async () => {
    const r = await run(['grep', '^Seccomp', '/proc/self/status']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /Seccomp:\s+2/);
    assert.match(r.out, /Seccomp_filters:\s+1/);
  });

  test("no process a box can see names the host's folders (bwrap's arguments come through a descriptor)", async () => {
    const r = await run(['sh', '-c', 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f"; echo; done']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /bwrap --args 4/);
    assert.ok(!r.out.includes(root), r.out);
  });

  test('unshare -Urn and unshare -m fail with "Operation not permitted"', async () => {
    for (const argv of [['unshare', '-Urn', 'true'], ['unshare', '-m', 'true'], ['unshare', '-U', 'true']]) {
      const r = await run(argv);
      assert.notEqual(r.code, 0, argv.join(' '));
      assert.match(r.out, /Operation not permitted/, argv.join(' '));
    }
  });

  test('raw mount, keyring, bpf, perf, userfaultfd, kexec, module, setns and namespace calls fail with EPERM', async () => {
    const n = (name: Parameters<typeof syscallNumber>[1]) => syscallNumber('x64', name);
    const calls: Record<string, number[]> = {
      mount: [n('mount'), 0, 0, 0, 0, 0],
      umount2: [n('umount2'), 0, 0],
      pivot_root: [n('pivot_root'), 0, 0],
      fsopen: [n('fsopen'), 0, 0],
      open_tree: [n('open_tree'), -1, 0, 0],
      keyctl: [n('keyctl'), 0, -3, 0], // KEYCTL_GET_KEYRING_ID of the session keyring: succeeds without the filter
      add_key: [n('add_key'), 0, 0, 0, 0, 0],
      request_key: [n('request_key'), 0, 0, 0, 0],
      bpf: [n('bpf'), 0, 0, 0],
      perf_event_open: [n('perf_event_open'), 0, 0, 0, -1, 0],
      userfaultfd: [n('userfaultfd'), 1], // UFFD_USER_MODE_ONLY: succeeds without the filter
      kexec_load: [n('kexec_load'), 0, 0, 0, 0],
      kexec_file_load: [n('kexec_file_load'), -1, -1, 0, 0, 0],
      init_module: [n('init_module'), 0, 0, 0],
      finit_module: [n('finit_module'), -1, 0, 0],
      delete_module: [n('delete_module'), 0, 0],
      setns: [n('setns'), -1, 0], // EBADF without the filter
      io_uring_setup: [n('io_uring_setup'), 1, 0], // EFAULT without the filter
      unshare_user: [n('unshare'), NEW.NEWUSER],
      unshare_net: [n('unshare'), NEW.NEWNET],
      unshare_cgroup: [n('unshare'), NEW.NEWCGROUP],
      clone_user: [n('clone'), NEW.NEWUSER | SIGCHLD, 0, 0, 0, 0],
      clone_net: [n('clone'), NEW.NEWNET | SIGCHLD, 0, 0, 0, 0],
      x32_getpid: [0x40000000 | 39], // ENOSYS on a kernel without x32; never a way around the list
    };
    const r = await run(['python3', '-c', PROBE, JSON.stringify(calls)]);
    assert.equal(r.code, 0, r.out);
    const got = JSON.parse(r.out) as Record<string, string>;
    for (const name of Object.keys(calls)) assert.equal(got[name], 'EPERM', `${name}: ${got[name]}`);
  });

  test('clone3 answers ENOSYS while fork, threads and unshare without a namespace still work', async () => {
    const calls = { clone3: [syscallNumber('x64', 'clone3'), 0, 0], clone_fork: [syscallNumber('x64', 'clone'), SIGCHLD, 0, 0, 0, 0], unshare_files: [syscallNumber('x64', 'unshare'), 0x400] };
    const r = await run(['python3', '-c', PROBE, JSON.stringify(calls)]);
    assert.equal(r.code, 0, r.out);
    assert.deepEqual(JSON.parse(r.out), { clone3: 'ENOSYS', clone_fork: 'ok', unshare_files: 'ok' });
    const threads = await run(['python3', '-c', 'import threading, subprocess; t = threading.Thread(target=lambda: None); t.start(); t.join(); print(subprocess.run(["true"]).returncode)']);
    assert.equal(threads.out, '0');
  });

  test('an i386 system call (int 0x80) from a 64-bit process fails with EPERM', async (t) => {
    // Outside a box first: a kernel without IA32 emulation answers int 0x80 with a fault, not a call.
    const host = spawnSync('python3', ['-c', I386_GETPID], { encoding: 'utf8' });
    if (host.status !== 0) return t.skip(`this kernel does not take i386 calls (${host.signal ?? host.status})`);
    assert.equal(host.stdout.trim(), 'ok');
    const r = await run(['python3', '-c', I386_GETPID]);
    assert.equal(r.out, 'EPERM');
  });

  /** A toolchain's smoke test, or why this machine cannot run it (`.ci/run` installs them all). */
  const smoke: [string, string[], RegExp][] = [
    ['node', ['node', '-e', 'require("node:child_process").execFileSync("true"); const { Worker } = require("node:worker_threads"); new Worker("", { eval: true }).on("exit", () => console.log("node", 1 + 1))'], /^node 2$/],
    ['npm', ['npm', '--version'], /^\d+\.\d+\.\d+$/],
    ['python3', ['python3', '-c', 'import ssl, sqlite3; print("python", 6 * 7)'], /^python 42$/],
    ['pip3', ['pip3', '--version'], /^pip \d+/],
    ['ruby', ['ruby', '-e', 'puts "ruby #{6 * 7}"'], /^ruby 42$/],
    ['php', ['php', '-r', 'echo "php ", 6 * 7, "\\n";'], /^php 42$/],
    ['cargo', ['cargo', '--version'], /^cargo \d+/],
    ['pnpm', ['pnpm', '--version'], /^\d+\.\d+\.\d+$/],
    ['bun', ['bun', '--version'], /^\d+\.\d+\.\d+$/],
  ];
  for (const [name, argv, expected] of smoke) {
    const present = ['/usr/local/bin', '/usr/bin', '/bin'].some((d) => existsSync(path.join(d, name)));
    test(`${name} runs under the filter`, { skip: !present && `this machine has no ${name} in the box's PATH` }, async () => {
      const r = await run(argv);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out.split('\n').pop()!, expected);
    });
  }

  test('go builds a program that starts goroutines and a child, and runs it', { skip: !existsSync('/usr/bin/go') && !existsSync('/usr/local/bin/go') && 'this machine has no go' }, async () => {
    const app = path.join(root, 'app');
    writeFileSync(path.join(app, 'go.mod'), 'module hello\n\ngo 1.19\n');
    writeFileSync(path.join(app, 'main.go'), 'package main\n\nimport (\n\t"fmt"\n\t"os/exec"\n\t"sync"\n)\n\nfunc main() {\n\tvar wg sync.WaitGroup\n\tfor i := 0; i < 8; i++ {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done() }()\n\t}\n\twg.Wait()\n\tif err := exec.Command("true").Run(); err != nil {\n\t\tpanic(err)\n\t}\n\tfmt.Println("go", 6*7)\n}\n');
    for (const f of ['go.mod', 'main.go']) chownSync(path.join(app, f), uid, uid);
    const env = { GOCACHE: '/home/berth/.cache/go', GOPATH: '/home/berth/go', GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' };
    const built = await run(['go', 'build', '-o', 'hello', '.'], env);
    assert.equal(built.code, 0, built.out);
    const ran = await run(['./hello']);
    assert.equal(ran.out, 'go 42');
  });
});
