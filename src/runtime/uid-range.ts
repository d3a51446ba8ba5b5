import { readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config-error.js';
import { withFileLock } from '../lib/lockfile.js';

/**
 * The sandbox uid range of a data dir: every Berth on one host allocates its projects' uids from a
 * range of its own, so two servers never run two projects as one uid (nor read each other's files).
 *
 * A range is `size` uids from `first`: `first` is the egress check's box, projects get `first + 1`
 * upward. The default ranges are 199999 + k * 65536 (k = 0, 1, ...): range 0 is what every Berth used
 * before ranges existed (projects from 200000, the egress check at 199999), so a lone Berth upgraded
 * keeps its uids.
 *
 * At its first start a data dir claims the lowest free range (or the one BERTH_SANDBOX_UID_BASE
 * names) and records it in `<data-dir>/uid-range.json`; every start after reads it from there, so
 * instances sharing a data dir (PostgreSQL scale-out) share its range. A host-wide registry
 * (BERTH_UID_REGISTRY, default /var/lib/berth/uid-ranges.json: it must survive reboots) lists the
 * claimed ranges by data dir, read and rewritten under an flock (`<registry>.lock`), each file
 * written whole and renamed into place. A start whose range overlaps another data dir's is refused.
 * A data dir that is gone, or no longer records the range the registry has for it, frees its range.
 */

export const UID_RANGE_SIZE = 65536;
/** The first project uid of range 0 (what BERTH_SANDBOX_UID_BASE defaults to). */
export const DEFAULT_UID_BASE = 200000;
export const DEFAULT_UID_REGISTRY = '/var/lib/berth/uid-ranges.json';
export const RANGE_FILE = 'uid-range.json';
const MAX_UID = 2 ** 31 - 2;

export interface UidRange {
  /** The egress check's uid; projects get `first + 1` up to `first + size - 1`. */
  first: number;
  size: number;
}

interface RegistryEntry extends UidRange {
  dataDir: string;
  claimedAt: string;
}

/** A ConfigError: `berth serve` prints the message and exits 1. */
export class UidRangeError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'UidRangeError';
  }
}

export interface ClaimOptions {
  dataDir: string;
  /** The host-wide registry file (BERTH_UID_REGISTRY). */
  registry: string;
  /** BERTH_SANDBOX_UID_BASE when set: the first project uid of a range claimed now. */
  base?: number | null;
}

const describe = (r: UidRange) => `${r.first}-${r.first + r.size - 1}`;
const overlaps = (a: UidRange, b: UidRange) => a.first < b.first + b.size && b.first < a.first + a.size;

function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** The range a data dir records, or null (none yet, or a file that is not one). */
export function recordedRange(dataDir: string): UidRange | null {
  try {
    const v = JSON.parse(readFileSync(path.join(dataDir, RANGE_FILE), 'utf8')) as Partial<UidRange>;
    return Number.isInteger(v.first) && Number.isInteger(v.size) && v.first! > 0 && v.size! > 1 ? { first: v.first!, size: v.size! } : null;
  } catch {
    return null;
  }
}

function readRegistry(file: string): RegistryEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new UidRangeError(`cannot read the uid range registry ${file}: ${(e as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as { ranges?: RegistryEntry[] };
    return (v.ranges ?? []).filter((r) => typeof r.dataDir === 'string' && Number.isInteger(r.first) && Number.isInteger(r.size));
  } catch {
    throw new UidRangeError(`the uid range registry ${file} is not valid JSON; fix or remove it (every data dir re-registers its recorded range at its next start)`);
  }
}

/** Writes `file` whole, then renames it into place: a reader sees the old or the new, never half. */
function writeAtomically(file: string, value: unknown, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
  renameSync(tmp, file);
}

function pinned(base: number): UidRange {
  if (!Number.isInteger(base) || base < 1001 || base - 1 + UID_RANGE_SIZE > MAX_UID) throw new UidRangeError(`BERTH_SANDBOX_UID_BASE must be a whole number from 1001 to ${MAX_UID - UID_RANGE_SIZE + 1}`);
  return { first: base - 1, size: UID_RANGE_SIZE };
}

function lowestFree(taken: UidRange[]): UidRange {
  for (let first = DEFAULT_UID_BASE - 1; first + UID_RANGE_SIZE - 1 <= MAX_UID; first += UID_RANGE_SIZE) {
    const r = { first, size: UID_RANGE_SIZE };
    if (!taken.some((t) => overlaps(t, r))) return r;
  }
  throw new UidRangeError('every sandbox uid range on this host is claimed; remove the data dirs no longer used from the uid range registry');
}

/**
 * This data dir's range: the recorded one, else a range claimed now. Refuses (UidRangeError) when it
 * overlaps a range another data dir on this host claimed, naming that data dir.
 */
export function claimUidRange(opts: ClaimOptions): UidRange {
  const dataDir = realDir(opts.dataDir);
  return withFileLock(`${opts.registry}.lock`, () => {
    // Every other data dir that still records the range the registry has for it.
    const others = readRegistry(opts.registry).filter((e) => {
      if (realDir(e.dataDir) === dataDir) return false;
      const r = recordedRange(e.dataDir);
      return !!r && r.first === e.first && r.size === e.size;
    });
    let range = recordedRange(dataDir);
    const fresh = !range;
    if (!range) {
      // A data dir used before ranges existed (projects from 200000) gets range 0 when it is free: on a
      // host with one Berth, always. (Not refused otherwise: `berth admin` may have made the database first.)
      range = opts.base != null ? pinned(opts.base) : lowestFree(others);
    }
    const clash = others.find((o) => overlaps(o, range!));
    if (clash) {
      throw new UidRangeError(
        `the sandbox uid range ${describe(range)} of the data dir ${dataDir} overlaps ${describe(clash)}, claimed by the data dir ${clash.dataDir} (registry ${opts.registry}). ` +
          `Two Berth servers on one host must not share uids: ${fresh ? 'set BERTH_SANDBOX_UID_BASE to a free base (or unset it to take the lowest free range) and start again' : `if this data dir is a copy of ${clash.dataDir}, give it a range of its own: stop it, delete ${path.join(dataDir, RANGE_FILE)} and set BERTH_SANDBOX_UID_BASE to a free base (the projects it already has keep the uids its database records)`}.`,
      );
    }
    if (fresh) writeAtomically(path.join(dataDir, RANGE_FILE), { ...range, claimedAt: new Date().toISOString() }, 0o600);
    const mine: RegistryEntry = { dataDir, ...range, claimedAt: new Date().toISOString() };
    writeAtomically(opts.registry, { version: 1, ranges: [...others, mine].sort((a, b) => a.first - b.first) }, 0o644);
    return range;
  });
}
