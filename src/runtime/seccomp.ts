import { endianness } from 'node:os';

/**
 * The seccomp filter every sandboxed build step and app runs under (contract section 18), as the
 * classic-BPF program bubblewrap's `--seccomp FD` reads: a raw array of `struct sock_filter`
 * (`u16 code, u8 jt, u8 jf, u32 k`, native byte order). Generated here, once per server start, rather
 * than by libseccomp (see docs/decisions.md "Seccomp").
 *
 * A deny list: everything is allowed except
 *  - calls that make or enter namespaces: `unshare` and `clone` whose flags hold any CLONE_NEW* bit,
 *    `setns`; `clone3` answers ENOSYS (its flags live in memory a filter cannot read), so libc falls
 *    back to `clone`, whose flags it can;
 *  - mounting (`mount`, `umount2`, `pivot_root` and the new mount API), kernel keyrings, `bpf`,
 *    `perf_event_open`, `userfaultfd`, `kexec_*`, module loading and io_uring: EPERM;
 *  - any call made through another ABI than the host's own (i386 `int 0x80` or the x32 ABI on x86_64,
 *    32-bit ARM on aarch64): EPERM, so a foreign syscall table cannot go around the list.
 */

/** The calls that fail with EPERM whatever their arguments. */
export const SECCOMP_DENIED = [
  'setns',
  'mount',
  'umount2',
  'pivot_root',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'keyctl',
  'add_key',
  'request_key',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
] as const;

type Denied = (typeof SECCOMP_DENIED)[number];
type Checked = 'clone' | 'clone3' | 'unshare';

interface ArchTable {
  /** `seccomp_data.arch` of the host's own ABI (AUDIT_ARCH_*). */
  audit: number;
  /** Bits of `seccomp_data.nr` that select another ABI on the same arch (x32 on x86_64). */
  foreignNrBits: number;
  nr: Record<Denied | Checked, number>;
}

/** The calls numbered alike on every arch since Linux 5.1 (asm-generic 424 and up). */
const UNIFIED = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
};

/** Syscall numbers from the kernel's arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h. */
const ARCHES: Record<string, ArchTable> = {
  x64: {
    audit: 0xc000003e, // AUDIT_ARCH_X86_64
    foreignNrBits: 0x40000000, // __X32_SYSCALL_BIT
    nr: {
      ...UNIFIED,
      clone: 56,
      unshare: 272,
      setns: 308,
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      keyctl: 250,
      add_key: 248,
      request_key: 249,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      kexec_load: 246,
      kexec_file_load: 320,
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
    },
  },
  arm64: {
    audit: 0xc00000b7, // AUDIT_ARCH_AARCH64
    foreignNrBits: 0,
    nr: {
      ...UNIFIED,
      clone: 220,
      unshare: 97,
      setns: 268,
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      keyctl: 219,
      add_key: 217,
      request_key: 218,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      kexec_load: 104,
      kexec_file_load: 294,
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
    },
  },
};

/** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: all in the low 32 bits of the flags. */
export const CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** `unshare` also takes CLONE_NEWTIME (0x80), a bit that `clone` reads as part of the exit signal. */
export const UNSHARE_NEW_FLAGS = CLONE_NEW_FLAGS | 0x80;

const EPERM = 1;
const ENOSYS = 38;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const SECCOMP_RET_ERRNO = 0x00050000;

// Classic BPF opcodes (linux/bpf_common.h): BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JSET|BPF_K, BPF_RET|BPF_K.
export const BPF = { LD_W_ABS: 0x20, JEQ_K: 0x15, JSET_K: 0x45, RET_K: 0x06 } as const;
// Offsets in struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (low word first on little-endian).
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

/** One instruction before assembly: jumps name a label (or fall through when absent). */
type Op = { label: string } | { code: number; k: number; jt?: string; jf?: string };

export class SeccompUnsupportedError extends Error {}

/** The architectures the filter has a syscall table for (Node's `process.arch` names). */
export function seccompArches(): string[] {
  return Object.keys(ARCHES);
}

/** The syscall number of `name` on `arch` (tests and docs). */
export function syscallNumber(arch: string, name: Denied | Checked): number {
  const table = ARCHES[arch];
  if (!table) throw new SeccompUnsupportedError(`no seccomp syscall table for ${arch}`);
  return table.nr[name];
}

/** The AUDIT_ARCH_* value of `arch`'s own ABI. */
export function auditArch(arch: string): number {
  const table = ARCHES[arch];
  if (!table) throw new SeccompUnsupportedError(`no seccomp syscall table for ${arch}`);
  return table.audit;
}

function program(t: ArchTable): Op[] {
  const ops: Op[] = [
    { code: BPF.LD_W_ABS, k: ARCH },
    { code: BPF.JEQ_K, k: t.audit, jf: 'deny' },
    { code: BPF.LD_W_ABS, k: NR },
  ];
  if (t.foreignNrBits) ops.push({ code: BPF.JSET_K, k: t.foreignNrBits, jt: 'deny' });
  ops.push({ code: BPF.JEQ_K, k: t.nr.clone3, jt: 'nosys' });
  ops.push({ code: BPF.JEQ_K, k: t.nr.clone, jt: 'clone' });
  ops.push({ code: BPF.JEQ_K, k: t.nr.unshare, jt: 'unshare' });
  for (const name of SECCOMP_DENIED) ops.push({ code: BPF.JEQ_K, k: t.nr[name], jt: 'deny' });
  ops.push({ code: BPF.RET_K, k: SECCOMP_RET_ALLOW });
  ops.push({ label: 'clone' }, { code: BPF.LD_W_ABS, k: ARG0_LOW }, { code: BPF.JSET_K, k: CLONE_NEW_FLAGS, jt: 'deny' }, { code: BPF.RET_K, k: SECCOMP_RET_ALLOW });
  ops.push({ label: 'unshare' }, { code: BPF.LD_W_ABS, k: ARG0_LOW }, { code: BPF.JSET_K, k: UNSHARE_NEW_FLAGS, jt: 'deny' }, { code: BPF.RET_K, k: SECCOMP_RET_ALLOW });
  ops.push({ label: 'deny' }, { code: BPF.RET_K, k: SECCOMP_RET_ERRNO | EPERM });
  ops.push({ label: 'nosys' }, { code: BPF.RET_K, k: SECCOMP_RET_ERRNO | ENOSYS });
  return ops;
}

/** Resolves labels to forward jump offsets (classic BPF jumps only forward, by at most 255) and packs each `struct sock_filter`. */
function assemble(ops: Op[]): Buffer {
  const at = new Map<string, number>();
  const insns: Exclude<Op, { label: string }>[] = [];
  for (const op of ops) {
    if ('label' in op) at.set(op.label, insns.length);
    else insns.push(op);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((op, i) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined) throw new Error(`seccomp: no label ${label}`);
      const d = target - (i + 1);
      if (d < 0 || d > 255) throw new Error(`seccomp: jump to ${label} out of range (${d})`);
      return d;
    };
    out.writeUInt16LE(op.code, i * 8);
    out.writeUInt8(offset(op.jt), i * 8 + 2);
    out.writeUInt8(offset(op.jf), i * 8 + 3);
    out.writeUInt32LE(op.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The filter for `arch` (default: this host's), as the bytes bubblewrap reads. Throws
 * SeccompUnsupportedError for an arch without a syscall table here.
 */
export function seccompFilter(arch: string = process.arch): Buffer {
  const table = ARCHES[arch];
  if (!table) throw new SeccompUnsupportedError(`the sandbox's seccomp filter has no syscall table for ${arch} (it has ${seccompArches().join(', ')}): set BERTH_RUNTIME=docker`);
  // Both supported arches are little-endian; sock_filter is read in the host's byte order.
  if (endianness() !== 'LE') throw new SeccompUnsupportedError('the sandbox\'s seccomp filter is written for little-endian hosts');
  return assemble(program(table));
}
