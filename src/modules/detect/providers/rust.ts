/**
 * The rust provider, after Railpack's (core/providers/rust): a `Cargo.toml`. The release build is
 * `cargo build --release` and the app runs the binary it leaves in `target/release/` (Railpack
 * copies it to `bin/` for its slim image; Berth runs it where cargo put it).
 *
 * Which binary: in a workspace (`[workspace] members`), the first member that builds one, looking
 * at `default-members` first, then `members`, skipping `exclude`d ones and expanding `*` (a member
 * builds a binary when it has `src/main.rs`, `src/bin/`, a `[[bin]]`, or no `src/lib.rs`): it is
 * built alone (`--package <name>`). Otherwise the package's own binaries: `src/main.rs`,
 * `src/bin/*.rs` and, beyond Railpack (which names every binary after the package), the names its
 * `[[bin]]` tables give; one binary runs, several run the `default-run` one, and with no
 * `default-run` there is no start command (cargo itself would not know which to run).
 *
 * The version pin, strongest first: mise (`mise.toml`, `.tool-versions`), `rust-toolchain.toml`
 * (a numbered `channel`, not `stable`), the legacy `rust-toolchain`, `rust-version` in Cargo.toml,
 * `.rust-version`, `rust-version.txt`. Railpack also derives a version from the `edition`: that is
 * a minimum, not a pin, and Berth does not answer it. Rust apps read $PORT themselves.
 */
import path from 'node:path';
import { globFolders } from '../folders.js';
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { toolVersion, type Pin } from './versions.js';

type Toml = Record<string, any>;

const SEMVER = /^\d+\.\d+(?:\.\d+)?$/;
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

/** Folders matching a workspace member pattern (`crates/*`, `api`), relative to the app, sorted. */
export function expandMember(f: Facts, pattern: string): string[] {
  return globFolders(path.join(f.root, f.rel), pattern);
}

interface Crate {
  name: string | null;
  /** The binaries the crate builds, the one of `src/main.rs` first. */
  bins: string[];
  defaultRun: string | null;
}

/** A package's binaries: `[[bin]]` names, `src/main.rs` (named after the package), `src/bin/*`. */
function crateAt(f: Facts, dir: string, manifest: Toml | null): Crate {
  const at = (p: string) => (dir ? `${dir}/${p}` : p);
  const pkg = manifest?.package;
  const name = str(pkg?.name);
  const auto = pkg?.autobins !== false;
  const declared = (Array.isArray(manifest?.bin) ? manifest.bin : []).filter((b: any) => str(b?.name)) as { name: string; path?: string }[];
  const bins: string[] = [];
  const mainRs = f.read(at('src/main.rs')) !== null;
  const mainBin = declared.find((b) => b.path?.replace(/^\.\//, '') === 'src/main.rs' || (!b.path && b.name === name));
  if (mainBin) bins.push(mainBin.name);
  else if (mainRs && auto && name) bins.push(name);
  for (const b of declared) bins.push(b.name);
  if (auto) {
    const binDir = f.list(at('src/bin'));
    for (const file of [...binDir.files].sort()) if (file.endsWith('.rs')) bins.push(file.slice(0, -3));
    for (const sub of [...binDir.dirs].sort()) if (f.list(at(`src/bin/${sub}`)).files.has('main.rs')) bins.push(sub);
  }
  return { name, bins: [...new Set(bins)], defaultRun: str(pkg?.['default-run']) };
}

/** The binary of a crate that runs: its only one, else `default-run`; null when that cannot be told. */
function runBinary(c: Crate): string | null {
  if (c.bins.length === 1) return c.bins[0]!;
  return c.defaultRun && c.bins.includes(c.defaultRun) ? c.defaultRun : null;
}

/** The workspace member that builds a binary, as Railpack picks it, with the binary to run. */
function workspaceBinary(f: Facts, ws: Toml): { pkg: string; bin: string } | null {
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const members = list(ws.members);
  if (!members.length) return null;
  const excluded = new Set(list(ws.exclude).map((e) => e.replace(/^\.\//, '').replace(/\/+$/, '')));
  for (const pattern of [...list(ws['default-members']), ...members]) {
    for (const dir of expandMember(f, pattern)) {
      if (excluded.has(dir) || excluded.has(pattern)) continue;
      const crate = crateAt(f, dir, f.toml(`${dir}/Cargo.toml`));
      if (!crate.name) continue;
      // Railpack: `src/main.rs`, `src/bin/`, a `[[bin]]`, or no `src/lib.rs` (all but the last are in `bins`).
      if (!crate.bins.length && f.read(`${dir}/src/lib.rs`) !== null) continue;
      const bin = runBinary(crate) ?? (crate.bins.includes(crate.name) ? crate.name : (crate.bins[0] ?? crate.name));
      return { pkg: crate.name, bin };
    }
  }
  return null;
}

function rustVersion(f: Facts, cargo: Toml | null): Pin | null {
  const mise = toolVersion(f, ['rust']);
  if (mise) return mise;
  const toolchain = f.toml('rust-toolchain.toml')?.toolchain;
  const fromToolchain = str(toolchain?.channel) ?? str(toolchain?.version);
  if (fromToolchain && SEMVER.test(fromToolchain)) return { value: fromToolchain, source: 'rust-toolchain.toml' };
  const legacy = f.read('rust-toolchain');
  if (legacy !== null) {
    const channel = /\[toolchain\]/.test(legacy) ? (f.toml('rust-toolchain')?.toolchain?.channel as unknown) : legacy.trim();
    if (typeof channel === 'string' && SEMVER.test(channel.trim())) return { value: channel.trim(), source: 'rust-toolchain' };
  }
  const rv = cargo?.package?.['rust-version'];
  const fromCargo = str(rv) ?? (rv && typeof rv === 'object' && rv.workspace === true ? str(cargo?.workspace?.package?.['rust-version']) : null);
  if (fromCargo) return { value: fromCargo, source: 'Cargo.toml' };
  for (const file of ['.rust-version', 'rust-version.txt']) {
    const v = /\d+\.\d+(?:\.\d+)?/.exec(f.read(file) ?? '')?.[0];
    if (v) return { value: v, source: file };
  }
  return null;
}

export const rustProvider: Provider = {
  name: 'rust',
  detect: (f) => f.hasFile('Cargo.toml'),
  plan(f): Detection {
    const cargo = f.toml('Cargo.toml');
    const d = detection('rust', { packageManager: 'cargo', programs: ['cargo'] });
    const version = rustVersion(f, cargo);
    if (version) d.version = version;
    const member = cargo?.workspace && typeof cargo.workspace === 'object' ? workspaceBinary(f, cargo.workspace) : null;
    if (member) {
      d.build = [`cargo build --release --package ${member.pkg}`];
      d.start = `./target/release/${member.bin}`;
      return d;
    }
    const crate = crateAt(f, '', cargo);
    if (crate.bins.length) d.build = ['cargo build --release'];
    const bin = runBinary(crate);
    if (bin) d.start = `./target/release/${bin}`;
    return d;
  },
};
