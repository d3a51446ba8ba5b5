import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a box used so far, as the kernel counts it (issue 38 point 1): cumulative counters (CPU time,
 * bytes read and written, bytes received and sent) and the memory it holds now. A field is null when
 * this machine cannot tell (no such controller, no network of its own). The metrics sampler turns two
 * readings into rates.
 */
export interface UsageCounters {
  /** CPU time of every process of the box, ever (microseconds). */
  cpuUsec: number | null;
  /** Memory the box's group holds now (bytes; page cache included, as the limit counts it). */
  memoryBytes: number | null;
  diskReadBytes: number | null;
  diskWriteBytes: number | null;
  /** Bytes the box received and sent on its network (its veth pair, seen from the host's end). */
  netRxBytes: number | null;
  netTxBytes: number | null;
}

/** A box, a container or a managed service whose usage the metrics sampler reads. */
export interface UsageTarget {
  kind: 'app' | 'service';
  /** The app's key (`appKeyOf`) or the managed service's id. */
  name: string;
  orgId: string;
  projectId: string;
  /** The environment (apps) or the service's name: a label for people. */
  label: string;
  usage(): UsageCounters | null | Promise<UsageCounters | null>;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function readNumber(file: string): number | null {
  const t = readText(file);
  if (t === null) return null;
  const n = Number(t.trim());
  return Number.isFinite(n) ? n : null;
}

/** `key value` lines (cpu.stat): the value of `key`. */
function field(text: string | null, key: string): number | null {
  if (text === null) return null;
  const at = text.indexOf(`${key} `);
  if (at < 0) return null;
  const end = text.indexOf('\n', at);
  const n = Number(text.slice(at + key.length + 1, end < 0 ? undefined : end));
  return Number.isFinite(n) ? n : null;
}

/** cgroup v2 io.stat (`8:0 rbytes=1 wbytes=2 ...` per device): the sums. */
function ioStatV2(text: string | null): { read: number; write: number } | null {
  if (text === null) return null;
  let read = 0;
  let write = 0;
  for (const m of text.matchAll(/\b(rbytes|wbytes)=(\d+)/g)) {
    if (m[1] === 'rbytes') read += Number(m[2]);
    else write += Number(m[2]);
  }
  return { read, write };
}

/** cgroup v1 blkio.throttle.io_service_bytes_recursive (`8:0 Read 123` per device, then `Total`): the sums. */
function ioStatV1(text: string | null): { read: number; write: number } | null {
  if (text === null) return null;
  let read = 0;
  let write = 0;
  for (const m of text.matchAll(/^\S+ (Read|Write) (\d+)$/gm)) {
    if (m[1] === 'Read') read += Number(m[2]);
    else write += Number(m[2]);
  }
  return { read, write };
}

/**
 * The counters of a cgroup: v2 (one directory: cpu.stat, memory.current, io.stat) or v1 (one
 * directory per hierarchy: cpuacct.usage, memory.usage_in_bytes, blkio's bytes).
 */
export function cgroupUsage(version: 1 | 2 | null, dirs: string[]): Omit<UsageCounters, 'netRxBytes' | 'netTxBytes'> {
  if (version === 2 && dirs[0]) {
    const dir = dirs[0];
    const io = ioStatV2(readText(path.join(dir, 'io.stat')));
    return { cpuUsec: field(readText(path.join(dir, 'cpu.stat')), 'usage_usec'), memoryBytes: readNumber(path.join(dir, 'memory.current')), diskReadBytes: io?.read ?? null, diskWriteBytes: io?.write ?? null };
  }
  const of = (controller: string) => dirs.find((d) => d.includes(`${path.sep}${controller}${path.sep}`));
  const acct = of('cpuacct');
  const mem = of('memory');
  const blkio = of('blkio');
  const ns = acct ? readNumber(path.join(acct, 'cpuacct.usage')) : null;
  const io = blkio ? ioStatV1(readText(path.join(blkio, 'blkio.throttle.io_service_bytes_recursive'))) : null;
  return { cpuUsec: ns === null ? null : Math.round(ns / 1000), memoryBytes: mem ? readNumber(path.join(mem, 'memory.usage_in_bytes')) : null, diskReadBytes: io?.read ?? null, diskWriteBytes: io?.write ?? null };
}

/** The box's traffic from the host's end of its veth pair: what the host sends is what the box receives. */
export function vethUsage(hostIf: string): { netRxBytes: number | null; netTxBytes: number | null } {
  const dir = path.join('/sys/class/net', hostIf, 'statistics');
  return { netRxBytes: readNumber(path.join(dir, 'tx_bytes')), netTxBytes: readNumber(path.join(dir, 'rx_bytes')) };
}
