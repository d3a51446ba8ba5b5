import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../lib/worker-file.js';
import type { Logger } from 'pino';
import type { EdgeTarget, EdgeUpstream } from '../backend.js';
import type { EdgeCertificates } from '../https.js';
import type { EdgeLimits } from '../limits.js';
import type { RequestEntry } from '../requests.js';
import { ENTRY_WIDTH, type AskKind, type EdgeThreadInit, type FromWorker, type ToWorker, type WireTarget, type WireUpstream } from './protocol.js';

/** What the threaded edge asks of the main thread (the hosting area's runtime answers). */
export interface EdgeThreadHost {
  lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null>;
  /** The app's address (wakes a sleeping app); throws when it cannot serve. */
  upstream(app: string): EdgeUpstream | Promise<EdgeUpstream>;
  /** The app was served (its idle time starts again). */
  touch(app: string): void;
  record(app: string, e: RequestEntry): void;
  acmeChallenge?(token: string): Promise<string | null>;
  certificates?(): EdgeCertificates | null;
  log: Logger;
}

/** A listener that could not bind: `which` names it, `code` is the system's (EADDRINUSE). */
export class EdgeListenError extends Error {
  constructor(
    readonly which: 'http' | 'https',
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The edge on a worker thread of its own, as the main thread sees it (docs/edge.md, "Where the edge
 * runs"): starts the worker (src/edge/thread/worker.ts), answers its questions (hosts, app addresses,
 * ACME answers, certificates), records the requests it reports, mirrors which apps have open requests,
 * and restarts it on the same ports when it dies.
 */
export class ThreadedEdge {
  readonly thread = true;
  private worker: Worker | null = null;
  private closing = false;
  private bound: { port: number; httpsPort: number | null } | null = null;
  /** Apps with an open request or WebSocket on the worker. */
  private readonly busy = new Set<string>();
  private nextId = 1;
  private readonly counts = new Map<number, (n: number) => void>();
  private closed: (() => void) | null = null;
  /** Stops telling the worker of certificate changes (set while it runs). */
  private unwatchCerts: (() => void) | null = null;

  constructor(
    private readonly host: EdgeThreadHost,
    private readonly where: { host: string; port: number; httpsPort: number | null; limits: EdgeLimits },
  ) {}

  /** Starts the worker; resolves once it listens, rejects with EdgeListenError when a port cannot be bound. */
  listen(): Promise<{ port: number; httpsPort: number | null }> {
    this.unwatchCerts ??= this.host.certificates?.()?.onInvalidate?.(() => this.post({ t: 'certs' })) ?? null;
    return this.spawn(this.where.port, this.where.httpsPort);
  }

  private spawn(port: number, httpsPort: number | null): Promise<{ port: number; httpsPort: number | null }> {
    const { limits } = this.where;
    const init: EdgeThreadInit = {
      host: this.where.host,
      port,
      httpsPort,
      limits: { ...limits, trustedProxies: [...limits.trustedProxies.ranges] },
      acme: !!this.host.acmeChallenge,
      certificates: !!this.host.certificates?.(),
    };
    const w = startWorker(import.meta.url, 'worker', init);
    this.worker = w;
    this.busy.clear();
    return new Promise((resolve, reject) => {
      let settled = false;
      w.on('message', (m: FromWorker) => {
        if (m.t === 'listening') {
          settled = true;
          this.bound = { port: m.port, httpsPort: m.httpsPort };
          resolve(this.bound);
        } else if (m.t === 'listen-failed') {
          settled = true;
          void w.terminate();
          reject(new EdgeListenError(m.which, m.code, m.message));
        } else this.onMessage(w, m);
      });
      w.on('error', (err) => this.host.log.error({ err }, 'the edge\'s worker thread failed'));
      w.on('exit', (code) => {
        if (this.worker === w) this.worker = null;
        for (const done of this.counts.values()) done(0);
        this.counts.clear();
        if (!settled) return reject(new Error(`the edge's worker thread exited (code ${code}) before it listened`));
        if (this.closing || !this.bound) return this.closed?.();
        this.host.log.error({ code }, 'the edge\'s worker thread exited: starting it again on the same ports');
        const { port: p, httpsPort: hp } = this.bound;
        this.spawn(p, hp).catch((err) => this.host.log.error({ err }, 'the edge\'s worker thread could not listen again'));
      });
    });
  }

  private onMessage(w: Worker, m: FromWorker): void {
    if (m.t === 'ask') void this.answer(w, m.id, m.kind, m.arg);
    else if (m.t === 'batch') {
      const e = m.entries;
      for (let i = 0; i + ENTRY_WIDTH <= e.length; i += ENTRY_WIDTH) {
        this.host.record(e[i] as string, { ts: e[i + 1] as string, method: e[i + 2] as string, path: e[i + 3] as string, status: e[i + 4] as number, durationMs: e[i + 5] as number, ip: e[i + 6] as string, bytes: e[i + 7] as number });
      }
      for (const app of m.touched) this.host.touch(app);
      for (const app of m.opened) this.busy.add(app);
      for (const app of m.idle) this.busy.delete(app);
    } else if (m.t === 'log') this.host.log[m.level](m.obj, m.msg);
    else if (m.t === 'answer') {
      this.counts.get(m.id)?.(m.value);
      this.counts.delete(m.id);
    } else if (m.t === 'closed') void w.terminate();
  }

  private async answer(w: Worker, id: number, kind: AskKind, arg: string): Promise<void> {
    let reply: ToWorker;
    try {
      reply = { t: 'answer', id, ok: true, value: await this.ask(kind, arg) };
    } catch (err) {
      reply = { t: 'answer', id, ok: false, message: (err as Error).message };
    }
    w.postMessage(reply);
  }

  private async ask(kind: AskKind, arg: string): Promise<unknown> {
    if (kind === 'lookup') {
      const t = await this.host.lookup(arg);
      if (!t) return null;
      const w: WireTarget = { projectId: t.projectId, unavailable: t.unavailable, ruleRows: t.ruleRows ?? [], static: t.static ?? null, httpsRedirect: t.httpsRedirect ?? false, hsts: t.hsts ?? false };
      return w;
    }
    if (kind === 'upstream') {
      const up = await this.host.upstream(arg);
      const lanes = up.lanes ? up.lanes().map((l) => ({ host: l.host, port: l.port, key: l.key })) : null;
      const w: WireUpstream = { host: up.host, port: up.port, key: up.key, lanes };
      return w;
    }
    if (kind === 'acme') return (await this.host.acmeChallenge?.(arg)) ?? null;
    const certs = this.host.certificates?.();
    if (kind === 'cert') return (await certs?.forServerName(arg)) ?? null;
    return (await certs?.tlsAlpn01?.(arg)) ?? null;
  }

  private post(m: ToWorker): void {
    this.worker?.postMessage(m);
  }

  /** Routes changed: the worker's cached hosts go. */
  invalidate(): void {
    this.post({ t: 'invalidate' });
  }

  /** The supervisor's state of an app changed: the worker's cached address of it goes. */
  appChanged(app: string): void {
    this.post({ t: 'app', app });
  }

  /** Has the app an open request or WebSocket connection (as the worker last said)? */
  openConnections(app: string): number {
    return this.busy.has(app) ? 1 : 0;
  }

  /** Open client connections of a socket address on the worker (tests and diagnostics). */
  connectionsOf(address: string): Promise<number> {
    return this.request((id) => ({ t: 'connections', id, address }));
  }

  /** Resolves once the requests the worker answered so far are recorded here (the request log is read after it). */
  async flush(): Promise<void> {
    await this.request((id) => ({ t: 'flush', id }));
  }

  private request(message: (id: number) => ToWorker): Promise<number> {
    const w = this.worker;
    if (!w) return Promise.resolve(0);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.counts.set(id, resolve);
      w.postMessage(message(id));
    });
  }

  port(): number | null {
    return this.bound?.port ?? null;
  }

  httpsPort(): number | null {
    return this.bound?.httpsPort ?? null;
  }

  /** The worker closes its listeners and connections, sends its last batch, and exits. */
  async close(): Promise<void> {
    this.closing = true;
    this.unwatchCerts?.();
    this.unwatchCerts = null;
    const w = this.worker;
    if (!w) return;
    const exited = new Promise<void>((resolve) => (this.closed = resolve));
    w.postMessage({ t: 'close' } satisfies ToWorker);
    const timer = setTimeout(() => void w.terminate(), 5000);
    await exited;
    clearTimeout(timer);
  }
}
