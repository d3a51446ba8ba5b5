import type Docker from 'dockerode';
import type { UsageCounters } from '../usage.js';

/**
 * A container's usage as the Engine counts it (`GET /containers/:id/stats?stream=false&one-shot=true`,
 * one reading without the Engine's second sample), in the sampler's counters (usage.ts): CPU time ever,
 * memory held now (page cache included, as the limit counts it), bytes read and written on block
 * devices, bytes received and sent on its networks. A field the Engine leaves out (a cgroup v2 host's
 * blkio on an old Engine, a container without a network) is null; a container gone is null.
 */
export async function containerUsage(c: Pick<Docker.Container, 'stats'>): Promise<UsageCounters | null> {
  let s: Docker.ContainerStats;
  try {
    s = await c.stats({ stream: false, 'one-shot': true });
  } catch {
    return null;
  }
  return usageOfStats(s);
}

/** The counters of one Engine stats answer (exported for its table of cases). */
export function usageOfStats(s: Partial<Docker.ContainerStats>): UsageCounters | null {
  const cpuNs = s.cpu_stats?.cpu_usage?.total_usage;
  if (typeof cpuNs !== 'number' || (cpuNs === 0 && !s.memory_stats?.usage)) return null; // not running: the Engine answers zeros
  const io = s.blkio_stats?.io_service_bytes_recursive;
  const sum = (op: string) => (Array.isArray(io) ? io.filter((e) => e.op.toLowerCase() === op).reduce((t, e) => t + e.value, 0) : null);
  const nets = s.networks ? Object.values(s.networks) : null;
  return {
    cpuUsec: Math.round(cpuNs / 1000),
    memoryBytes: typeof s.memory_stats?.usage === 'number' ? s.memory_stats.usage : null,
    diskReadBytes: sum('read'),
    diskWriteBytes: sum('write'),
    netRxBytes: nets ? nets.reduce((t, n) => t + n.rx_bytes, 0) : null,
    netTxBytes: nets ? nets.reduce((t, n) => t + n.tx_bytes, 0) : null,
  };
}

const FIELDS = ['cpuUsec', 'memoryBytes', 'diskReadBytes', 'diskWriteBytes', 'netRxBytes', 'netTxBytes'] as const;

/** The sum of readings, field by field (a field none of them has stays null); null for no reading. */
export function sumUsage(readings: UsageCounters[]): UsageCounters | null {
  if (!readings.length) return null;
  const out = Object.fromEntries(FIELDS.map((f) => [f, null])) as unknown as UsageCounters;
  for (const r of readings) for (const f of FIELDS) if (r[f] !== null) out[f] = (out[f] ?? 0) + r[f]!;
  return out;
}

/**
 * A Swarm service's usage: the sum of its task containers running on this Engine (found by Berth's
 * instance and kind labels and the service name the engine puts on each task), each read as
 * `containerUsage`. Tasks on other nodes are not counted (their Engines answer for them). Null while
 * none runs here.
 */
export async function serviceUsage(api: Pick<Docker, 'listContainers' | 'getContainer'>, instanceKey: string, service: string): Promise<UsageCounters | null> {
  const filters = { label: [`berth.instance=${instanceKey}`, 'berth.kind=app', `com.docker.swarm.service.name=${service}`] };
  const tasks = await api.listContainers({ filters }).catch(() => []);
  const readings = await Promise.all(tasks.map((t) => containerUsage(api.getContainer(t.Id))));
  return sumUsage(readings.filter((r): r is UsageCounters => r !== null));
}
