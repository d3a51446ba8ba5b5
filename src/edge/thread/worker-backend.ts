import type { EdgeBackend, EdgeTarget, EdgeUpstream } from '../backend.js';
import type { RequestEntry, RequestSink } from '../requests.js';
import { compileRules } from '../rules.js';
import { ENTRY_WIDTH, type AskKind, type FromWorker, type WireTarget, type WireUpstream } from './protocol.js';

/** A host's answer younger than this is served as it is. */
export const HOST_FRESH_MS = 100;
/** Younger than this it is served while the main thread is asked again; older, the request waits for the answer. */
export const HOST_STALE_MS = 800;
/**
 * How long the lanes of an app behind several addresses (a Swarm service's tasks) are rotated over
 * here before the main thread is asked again: a task that came is used this much later, and a task's
 * lane that left still accepts for 5 s (swarm-balancer.ts).
 */
export const LANES_FRESH_MS = 1000;
/** Requests are sent to the main thread this often (and at BATCH_MAX entries). */
export const BATCH_MS = 100;
const BATCH_MAX = 512;

type Ask = (kind: AskKind, arg: string) => Promise<unknown>;

interface HostEntry {
  /** When the answer was received (0: none yet). */
  at: number;
  target: EdgeTarget | null;
  pending: Promise<EdgeTarget | null> | null;
}

/**
 * The edge's backend on its worker thread (docs/edge.md, "Where the edge runs"): hosts and app
 * addresses asked of the main thread and cached here briefly; dropped when the main thread says routes
 * or an app's state changed. Also the request sink: entries and the apps served go to the main thread in
 * batches.
 */
export class WorkerBackend implements RequestSink {
  private readonly hosts = new Map<string, HostEntry>();
  /** Bumped on every drop: an answer asked for before a drop is not kept. */
  private gen = 0;
  /** Each app's address, and until when it may be used (Infinity: until the app's state changes). */
  private readonly upstreams = new Map<string, { up: EdgeUpstream; until: number }>();
  private readonly appGen = new Map<string, number>();
  private entries: (string | number)[] = [];
  private touched = new Set<string>();
  /** Apps whose open requests went from none to some (true) or back (false) since the last batch: their state now. */
  private openState = new Map<string, boolean>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ask: Ask,
    private readonly post: (m: FromWorker) => void,
  ) {}

  /** The EdgeBackend the worker's EdgeServer uses (the optional parts set by the worker). */
  backend(): EdgeBackend {
    return { lookup: (host) => this.lookup(host), upstream: (app) => this.upstream(app) };
  }

  lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null> {
    const e = this.hosts.get(host);
    if (e && e.at > 0) {
      const age = Date.now() - e.at;
      if (age < HOST_FRESH_MS) return e.target;
      if (age < HOST_STALE_MS) {
        void this.refresh(host, e).catch(() => {});
        return e.target;
      }
    }
    return this.refresh(host, e);
  }

  private refresh(host: string, existing: HostEntry | undefined): Promise<EdgeTarget | null> {
    let e = existing;
    if (!e) {
      e = { at: 0, target: null, pending: null };
      this.hosts.set(host, e);
      if (this.hosts.size > 10000) this.hosts.clear();
    }
    if (e.pending) return e.pending;
    const entry = e;
    const gen = this.gen;
    entry.pending = this.ask('lookup', host).then(
      (w) => {
        entry.pending = null;
        const target = toTarget(w as WireTarget | null);
        if (gen === this.gen) {
          entry.target = target;
          entry.at = Date.now();
        }
        return target;
      },
      (err: unknown) => {
        entry.pending = null;
        if (this.hosts.get(host) === entry) this.hosts.delete(host);
        throw err;
      },
    );
    return entry.pending;
  }

  upstream(app: string): EdgeUpstream | Promise<EdgeUpstream> {
    this.touch(app);
    const cached = this.upstreams.get(app);
    if (cached && (cached.until === Infinity || cached.until > Date.now())) return cached.up;
    const gen = this.appGen.get(app) ?? 0;
    return this.ask('upstream', app).then((v) => {
      const w = v as WireUpstream;
      const up: EdgeUpstream = { host: w.host, port: w.port, key: w.key };
      // Several addresses: the next one per request, rotated here (no message per request); none
      // listening yet: `host:port` itself, asked again soon.
      const lanes = w.lanes;
      if (lanes?.length) {
        let next = 0;
        up.pick = () => lanes[next++ % lanes.length]!;
      }
      if ((this.appGen.get(app) ?? 0) === gen) this.upstreams.set(app, { up, until: lanes ? Date.now() + LANES_FRESH_MS : Infinity });
      return up;
    });
  }

  /** Routes changed on the main thread: every host is asked again. */
  invalidate(): void {
    this.gen++;
    this.hosts.clear();
  }

  /** An app's state changed (start, swap, stop, sleep, crash, failure): its address and the hosts go. */
  appChanged(app: string): void {
    this.appGen.set(app, (this.appGen.get(app) ?? 0) + 1);
    this.upstreams.delete(app);
    this.invalidate();
  }

  record(app: string, e: RequestEntry): void {
    this.entries.push(app, e.ts, e.method, e.path, e.status, e.durationMs, e.ip, e.bytes);
    if (this.entries.length >= BATCH_MAX * ENTRY_WIDTH) this.flush();
    else this.schedule();
  }

  /**
   * An app's open requests went from none to some or back. The main thread hears the state with the next
   * batch (at most BATCH_MS later; the idle sweep runs every few seconds): a message per change cost
   * a wakeup of the main thread every few requests under load, when the count touches 0 between them.
   */
  openChanged(app: string, open: boolean): void {
    this.openState.set(app, open);
    this.schedule();
  }

  private touch(app: string): void {
    this.touched.add(app);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), BATCH_MS);
    this.timer.unref();
  }

  /** Sends what was served since the last batch. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.entries.length === 0 && this.touched.size === 0 && this.openState.size === 0) return;
    const opened: string[] = [];
    const idle: string[] = [];
    for (const [app, open] of this.openState) (open ? opened : idle).push(app);
    this.post({ t: 'batch', entries: this.entries, touched: [...this.touched], opened, idle });
    this.entries = [];
    this.touched = new Set();
    this.openState = new Map();
  }
}

function toTarget(w: WireTarget | null): EdgeTarget | null {
  if (!w) return null;
  return { projectId: w.projectId, unavailable: w.unavailable, rules: compileRules(w.ruleRows), static: w.static ?? null, httpsRedirect: w.httpsRedirect ?? false, hsts: w.hsts ?? false };
}
