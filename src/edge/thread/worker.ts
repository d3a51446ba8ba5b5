// The edge on a worker thread of its own (docs/edge.md, "Where the edge runs"): started by
// src/edge/thread/main.ts with EdgeThreadInit as workerData. The EdgeServer (and EdgeTls) listen here;
// hosts, app addresses, ACME answers and certificates are asked of the main thread, and what was
// served goes back in batches.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import { EdgeTls } from '../https.js';
import { EdgeServer } from '../proxy.js';
import { parseTrustedProxies } from '../../lib/trusted-proxies.js';
import type { AskKind, EdgeThreadInit, FromWorker, ToWorker } from './protocol.js';
import { WorkerBackend } from './worker-backend.js';

type Post = (m: FromWorker) => void;
type Answers = Map<number, { resolve(v: unknown): void; reject(e: Error): void }>;

/** Questions to the main thread, answered by `answers` (the worker's message handler settles them). */
function asker(post: Post, answers: Answers): (kind: AskKind, arg: string) => Promise<unknown> {
  let next = 1;
  return (kind, arg) => {
    const id = next++;
    return new Promise((resolve, reject) => {
      answers.set(id, { resolve, reject });
      post({ t: 'ask', id, kind, arg });
    });
  };
}

/** The main thread's logger, by message: what the edge logs reaches ctx.log as before. */
function forwardingLogger(post: Post): Logger {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (obj: unknown, msg?: string) => {
    if (typeof obj === 'string') return post({ t: 'log', level, obj: {}, msg: obj });
    const plain: Record<string, unknown> = {};
    for (const [k, v] of Object.entries((obj ?? {}) as Record<string, unknown>)) plain[k] = v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;
    try {
      post({ t: 'log', level, obj: plain, msg: msg ?? '' });
    } catch {
      post({ t: 'log', level, obj: {}, msg: msg ?? '' });
    }
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
}

/** Listens on the plain port, then the TLS one; tells the main thread the ports or what failed. */
async function listen(init: EdgeThreadInit, edge: EdgeServer, tls: EdgeTls | null, post: Post): Promise<void> {
  let http: { port: number };
  try {
    http = await edge.listen(init.host, init.port);
  } catch (e) {
    return post({ t: 'listen-failed', which: 'http', code: (e as NodeJS.ErrnoException).code, message: (e as Error).message });
  }
  if (tls && init.httpsPort !== null) {
    try {
      await tls.listen(init.host, init.httpsPort);
    } catch (e) {
      await edge.close();
      return post({ t: 'listen-failed', which: 'https', code: (e as NodeJS.ErrnoException).code, message: (e as Error).message });
    }
  }
  post({ t: 'listening', port: http.port, httpsPort: tls?.port() ?? null });
}

/** How long the worker serves a server name's certificate before asking the main thread again. */
const CERT_TTL_MS = 5_000;
/** Names kept at most (a flood of unknown server names gets no entries: only names with a certificate are kept). */
const MAX_CERT_NAMES = 10_000;

/** Everything lives in this call (one edge per worker thread; no module state). */
function run(port: MessagePort, init: EdgeThreadInit): void {
  const post: Post = (m) => port.postMessage(m);
  const answers: Answers = new Map();
  const ask = asker(post, answers);
  const log = forwardingLogger(post);
  const cache = new WorkerBackend(ask, post);
  const holder: { tls: EdgeTls | null } = { tls: null };
  const backend = {
    ...cache.backend(),
    ...(init.acme ? { acmeChallenge: (token: string) => ask('acme', token) as Promise<string | null> } : {}),
    httpsPort: () => holder.tls?.port() ?? null,
  };
  const limits = { ...init.limits, trustedProxies: parseTrustedProxies(init.limits.trustedProxies) };
  const edge = new EdgeServer(backend, cache, log, limits, (app, open) => cache.openChanged(app, open));
  type Pair = { cert: string; key: string } | null;
  /**
   * A server name's certificate, asked of the main thread once per CERT_TTL_MS instead of on every
   * handshake (a round trip and a copy of the PEM pair each); names without one are not kept, so a
   * first certificate is served at once, and the routes' invalidation drops them all.
   */
  const certs = new Map<string, { at: number; pair: Promise<Pair> }>();
  const forServerName = (name: string): Promise<Pair> => {
    const now = Date.now();
    const hit = certs.get(name);
    if (hit && now - hit.at < CERT_TTL_MS) return hit.pair;
    const pair = ask('cert', name) as Promise<Pair>;
    if (certs.size >= MAX_CERT_NAMES) certs.clear();
    const entry = { at: now, pair };
    certs.set(name, entry);
    const drop = () => certs.get(name) === entry && certs.delete(name);
    pair.then((p) => void (p ? undefined : drop()), drop);
    return pair;
  };
  const certificates = init.certificates ? { forServerName, tlsAlpn01: (name: string) => ask('alpn', name) as Promise<Pair> } : null;
  if (init.httpsPort !== null) holder.tls = new EdgeTls(edge, () => certificates, log);
  const close = async () => {
    await Promise.all([holder.tls?.close(), edge.close()]);
    cache.flush();
    post({ t: 'closed' });
  };
  port.on('message', (m: ToWorker) => {
    if (m.t === 'answer') {
      const a = answers.get(m.id);
      answers.delete(m.id);
      if (m.ok) a?.resolve(m.value);
      else a?.reject(new Error(m.message));
    } else if (m.t === 'invalidate') {
      cache.invalidate();
      certs.clear();
    }
    else if (m.t === 'app') cache.appChanged(m.app);
    else if (m.t === 'certs') certs.clear();
    else if (m.t === 'connections') post({ t: 'answer', id: m.id, value: edge.connectionsOf(m.address) });
    else if (m.t === 'flush') {
      cache.flush();
      post({ t: 'answer', id: m.id, value: 0 });
    } else if (m.t === 'close') void close();
  });
  void listen(init, edge, holder.tls, post);
}

run(parentPort!, workerData as EdgeThreadInit);
