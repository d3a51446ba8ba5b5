import { EdgeTls } from '../../edge/https.js';
import { edgeLimitsFromEnv } from '../../edge/limits.js';
import { EdgeServer, type EdgeBackend, type EdgeUpstream } from '../../edge/proxy.js';
import { EdgeListenError, ThreadedEdge } from '../../edge/thread/main.js';
import type { EdgeRoutes } from './edge-routes.js';
import type { BerthRuntime } from './host.js';

/** The edge as the runtime holds it: on a worker thread of its own, or on the main thread. */
export interface RunningEdge {
  readonly thread: boolean;
  port(): number | null;
  httpsPort(): number | null;
  /** Open requests and WebSocket connections of an app (more than 0: the app is not idle). */
  openConnections(app: string): number;
  /** Open client connections of a socket address (tests and diagnostics). */
  connectionsOf(address: string): number | Promise<number>;
  /** Routes changed (the threaded edge drops its copies). */
  invalidate(): void;
  /** The supervisor's state of an app changed (the threaded edge drops its address). */
  appChanged(app: string): void;
  /** Resolves once every request answered so far is in the request log and its stats (the threaded edge sends them in batches). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Today's edge on the main thread (several instances on one PostgreSQL, or BERTH_EDGE_THREAD=0). */
class MainThreadEdge implements RunningEdge {
  readonly thread = false;
  tls: EdgeTls | null = null;
  constructor(readonly edge: EdgeServer) {}
  port(): number | null {
    const a = this.edge.server.address();
    return a && typeof a === 'object' ? a.port : null;
  }
  httpsPort(): number | null {
    return this.tls?.port() ?? null;
  }
  openConnections(app: string): number {
    return this.edge.openConnections(app);
  }
  connectionsOf(address: string): number {
    return this.edge.connectionsOf(address);
  }
  invalidate(): void {}
  appChanged(): void {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {
    await Promise.all([this.tls?.close(), this.edge.close()]);
  }
}

function listenError(rt: BerthRuntime, which: 'http' | 'https', e: unknown): Error {
  const { edgeHost, edgePort, https } = rt.ctx.config;
  const code = (e as NodeJS.ErrnoException).code;
  if (which === 'http') {
    return new Error(`the edge proxy cannot listen on ${edgeHost}:${edgePort}` + (code === 'EADDRINUSE' ? ': the port is in use (set --edge-port / BERTH_EDGE_PORT, 0 picks a free one)' : `: ${(e as Error).message}`));
  }
  return new Error(`the edge's TLS listener cannot listen on ${edgeHost}:${https.port}` + (code === 'EADDRINUSE' ? ': the port is in use (set BERTH_HTTPS_PORT, 0 picks a free one)' : `: ${(e as Error).message}`));
}

/**
 * Starts the edge (docs/edge.md, "Where the edge runs"): on a worker thread of its own unless several
 * instances share one PostgreSQL (the edges forward to each other: `peer`/`hopToken` stay on the main
 * thread) or BERTH_EDGE_THREAD=0. Rejects with the message `berth serve` prints when a port is taken.
 */
export async function startEdge(rt: BerthRuntime, routes: EdgeRoutes, upstream: (app: string) => EdgeUpstream | Promise<EdgeUpstream>): Promise<{ edge: RunningEdge; port: number }> {
  const { ctx } = rt;
  const certificates = ctx.ports.certificates;
  const acme = certificates ? { acmeChallenge: (token: string) => ctx.ports.certificates?.http01(token) ?? Promise.resolve(null) } : {};
  const host = ctx.config.edgeHost;
  const httpsPort = ctx.config.https.port;
  if (!rt.owners.enabled && ctx.config.edgeThread) {
    const edge = new ThreadedEdge(
      { lookup: (h) => routes.lookup(h), upstream, touch: (app) => rt.supervisor.touch(app), record: (app, e) => rt.requests.record(app, e), ...acme, certificates: () => ctx.ports.certificates, log: ctx.log },
      { host, port: ctx.config.edgePort, httpsPort, limits: edgeLimitsFromEnv() },
    );
    try {
      const a = await edge.listen();
      return { edge, port: a.port };
    } catch (e) {
      throw e instanceof EdgeListenError ? listenError(rt, e.which, e) : e;
    }
  }
  const running: { tls: EdgeTls | null } = { tls: null };
  const backend: EdgeBackend = {
    lookup: (h) => routes.lookup(h),
    upstream,
    // Several instances on one PostgreSQL: an app another live instance runs is served through its edge.
    ...(rt.owners.enabled ? { peer: (app: string) => (rt.supervisor.upstreamNow(app) ? null : rt.owners.peerOf(app)), hopToken: rt.hopToken() } : {}),
    ...acme,
    httpsPort: () => running.tls?.port() ?? null,
  };
  const edge = new MainThreadEdge(new EdgeServer(backend, rt.requests, ctx.log));
  let port: number;
  try {
    port = (await edge.edge.listen(host, ctx.config.edgePort)).port;
  } catch (e) {
    throw listenError(rt, 'http', e);
  }
  if (httpsPort !== null) {
    const tlsEdge = new EdgeTls(edge.edge, () => ctx.ports.certificates, ctx.log);
    try {
      await tlsEdge.listen(host, httpsPort);
    } catch (e) {
      await edge.close();
      throw listenError(rt, 'https', e);
    }
    running.tls = edge.tls = tlsEdge;
  }
  return { edge, port };
}
