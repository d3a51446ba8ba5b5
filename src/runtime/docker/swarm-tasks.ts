import type Docker from 'dockerode';
import type { Backend } from './swarm-balancer.js';

/** How often the running tasks of the watched services are read while a balancer is open. */
const TASKS_POLL_MS = 1000;

/**
 * The running tasks of the Swarm services Berth balances, read from the engine every TASKS_POLL_MS
 * while any service is watched (one task list for all of them) and on demand. A task is a backend
 * once the engine says it runs and wants it running; its address is its node's and the port the
 * engine published there.
 */
export class TaskBackends {
  private readonly current = new Map<string, Backend[]>();
  private readonly watchers = new Map<string, number>();
  private readonly nodes = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> | null = null;

  constructor(private readonly api: Docker) {}

  /** Starts reading `service`'s tasks; answers the function that stops it. */
  watch(service: string): () => void {
    this.watchers.set(service, (this.watchers.get(service) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setInterval(() => void this.refresh().catch(() => {}), TASKS_POLL_MS);
      this.timer.unref();
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = (this.watchers.get(service) ?? 1) - 1;
      if (n > 0) this.watchers.set(service, n);
      else {
        this.watchers.delete(service);
        this.current.delete(service);
      }
      if (!this.watchers.size && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  get(service: string): Backend[] {
    return this.current.get(service) ?? [];
  }

  /** Reads the tasks now (or joins the read in flight). */
  refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    this.inflight = this.read().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async read(): Promise<void> {
    const names = [...this.watchers.keys()];
    if (!names.length) return;
    const services = (await this.api.listServices({ filters: { name: names } })) as Docker.Service[];
    const nameOf = new Map<string, string>();
    for (const s of services) if (s.Spec?.Name && this.watchers.has(s.Spec.Name)) nameOf.set(s.ID, s.Spec.Name);
    const tasks = nameOf.size ? ((await this.api.listTasks({ filters: { 'desired-state': ['running'] } })) as SwarmTask[]) : [];
    const found = new Map<string, Backend[]>(names.map((n) => [n, []]));
    for (const t of tasks) {
      const name = t.ServiceID ? nameOf.get(t.ServiceID) : undefined;
      if (!name || t.Status?.State !== 'running' || t.DesiredState !== 'running' || !t.NodeID) continue;
      const port = t.Status.PortStatus?.Ports?.find((p) => p.PublishMode === 'host' && p.PublishedPort)?.PublishedPort;
      if (!port) continue;
      const host = await this.nodeAddress(t.NodeID);
      if (host) found.get(name)!.push({ host, port });
    }
    for (const [name, list] of found) if (this.watchers.has(name)) this.current.set(name, list);
  }

  /** A node's address (its advertise address; a manager's without the port when the engine says 0.0.0.0). */
  private async nodeAddress(id: string): Promise<string | null> {
    if (!this.nodes.has(id)) {
      const nodes = (await this.api.listNodes()) as SwarmNode[];
      for (const n of nodes) {
        let addr = n.Status?.Addr;
        if (!addr || addr === '0.0.0.0') addr = n.ManagerStatus?.Addr?.replace(/:\d+$/, '');
        if (addr) this.nodes.set(n.ID, addr);
      }
    }
    return this.nodes.get(id) ?? null;
  }
}

/** The fields of a task and a node this reads (dockerode's types leave them out). */
export interface SwarmTask {
  ID: string;
  ServiceID?: string;
  NodeID?: string;
  DesiredState?: string;
  Spec?: { ContainerSpec?: { Image?: string } };
  Status?: {
    Timestamp?: string;
    State?: string;
    Message?: string;
    Err?: string;
    ContainerStatus?: { ExitCode?: number };
    PortStatus?: { Ports?: { PublishMode?: string; PublishedPort?: number; TargetPort?: number }[] };
  };
}

interface SwarmNode {
  ID: string;
  Status?: { Addr?: string };
  ManagerStatus?: { Addr?: string };
}
