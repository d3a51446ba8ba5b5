import type http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { StreamListener } from './fast/h2.js';
import type { EdgeServer } from './proxy.js';

/** Where the TLS listener gets a server name's certificate (the certificates area's port). */
export interface EdgeCertificates {
  forServerName(name: string): Promise<{ cert: string; key: string } | null>;
  /** The TLS-ALPN-01 challenge certificate of a name with a pending challenge (RFC 8737), or null. */
  tlsAlpn01?(name: string): Promise<{ cert: string; key: string } | null>;
  /** Calls `fn` whenever a name's certificate changed on this server (the threaded edge drops its copies); answers the unsubscribe. */
  onInvalidate?(fn: () => void): () => void;
}

/** The ALPN protocol of TLS-ALPN-01 validation (RFC 8737). */
export const ACME_TLS_ALPN = 'acme-tls/1';

/** Secure contexts kept (one per certificate); past this the cache starts over. */
const MAX_CONTEXTS = 2000;
/** An HTTP/2 connection idle this long is closed gracefully (GOAWAY; open streams finish). */
const H2_IDLE_MS = 30_000;

/**
 * The edge's TLS listener (contract section 14): terminates TLS with SNI and hands the decrypted
 * connection to the same request handling as plain HTTP.
 *
 * - SNI: `SNICallback` asks the certificates port for the server name; its PEM pair becomes a
 *   `SecureContext`, cached per certificate. No certificate (or no SNI): the handshake fails.
 * - ALPN `h2` and `http/1.1`. An HTTP/1.1 connection (or one without ALPN) is given to the plain edge's
 *   own node:http server (`edge.server.emit('connection', tlsSocket)`), exactly as node:https does: the
 *   same timeouts, request handler, WebSocket upgrades, connection cap and closing. An `h2` connection
 *   goes to a node:http2 server whose compatibility requests reach `edge.handleRequest`, the same
 *   handler (which writes no connection-specific headers over HTTP/2, and offers no upgrade there).
 * - Every accepted connection has Nagle's algorithm off (`noDelay`, TCP_NODELAY), as node:https's and
 *   node:http's servers and nginx's `tcp_nodelay` have it: node:tls and node:http2 leave it on, and an
 *   HTTP/2 answer written while an earlier frame is still unacknowledged could wait for its acknowledgement.
 * - TLS 1.2 minimum, Node's default cipher list (its OpenSSL's modern defaults: ECDHE with AES-GCM or
 *   ChaCha20-Poly1305 first), the server's cipher order. No OCSP stapling.
 * - TLS-ALPN-01 (RFC 8737): a ClientHello offering `acme-tls/1` is a validation; `ALPNCallback`
 *   selects `acme-tls/1` and marks the socket, then the SNI callback (OpenSSL runs it after ALPN
 *   selection; Node calls both with the socket as `this`) answers with the name's challenge
 *   certificate from the certificates port (none pending: the handshake fails), and the connection
 *   is closed once the handshake is done. Otherwise the server's preference: `h2`, then `http/1.1`;
 *   a client offering neither gets `no_application_protocol`, as with `ALPNProtocols`.
 */
export class EdgeTls {
  readonly server: tls.Server;
  private readonly h2: http2.Http2Server;
  private readonly contexts = new Map<string, tls.SecureContext>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  /** Handshakes that selected `acme-tls/1`. */
  private readonly acmeSockets = new WeakSet<object>();

  constructor(
    private readonly edge: EdgeServer,
    private readonly certificates: () => EdgeCertificates | null,
    private readonly log: Logger,
  ) {
    this.h2 = http2.createServer({}, (req, res) => void edge.handleRequest(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse));
    this.takeStreams();
    this.h2.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      session.setTimeout(H2_IDLE_MS, () => session.close());
    });
    const acmeSockets = this.acmeSockets;
    const self = this;
    this.server = tls.createServer({
      ALPNCallback(this: unknown, { protocols }: { servername: string; protocols: string[] }): string | undefined {
        if (protocols.includes(ACME_TLS_ALPN)) {
          if (this && typeof this === 'object') acmeSockets.add(this);
          return ACME_TLS_ALPN;
        }
        if (protocols.includes('h2')) return 'h2';
        if (protocols.includes('http/1.1')) return 'http/1.1';
        return undefined;
      },
      minVersion: 'TLSv1.2',
      honorCipherOrder: true,
      noDelay: true,
      handshakeTimeout: Math.max(1000, edge.limits.headersTimeoutMs),
      SNICallback(this: unknown, servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void) {
        if (this && typeof this === 'object' && acmeSockets.has(this)) self.alpnChallenge(servername, cb);
        else self.sni(servername, cb);
      },
    } as tls.TlsOptions);
    this.server.on('secureConnection', (socket: tls.TLSSocket) => {
      if (socket.alpnProtocol === ACME_TLS_ALPN) {
        // A validation: the handshake (with the challenge certificate) was the whole answer.
        socket.end();
        socket.setTimeout(2000, () => socket.destroy());
        return;
      }
      edge.countClient(socket);
      if (socket.alpnProtocol === 'h2') this.h2.emit('connection', socket);
      else edge.server.emit('connection', socket);
    });
    // A handshake that fails (no certificate for the name, a bad client) costs the connection only.
    this.server.on('tlsClientError', (err: Error, socket: tls.TLSSocket) => {
      this.log.debug({ err: err.message, servername: (socket as tls.TLSSocket & { servername?: string }).servername }, 'edge TLS handshake failed');
      socket.destroy();
    });
  }

  /**
   * Puts the HTTP/2 fast path (src/edge/fast/h2.ts) in front of node:http2's compatibility layer: each
   * stream goes there first, and one it does not take goes on to the compatibility layer's own listener
   * (its request and response objects, then `edge.handleRequest`). node:http2 registers that layer as the
   * server's one `stream` listener; if a Node version ever does otherwise, HTTP/2 stays on that layer.
   */
  private takeStreams(): void {
    const fast = this.edge.fastStreams;
    if (!fast) return;
    const own = this.h2.listeners('stream');
    if (own.length !== 1) return void this.log.warn('edge: node:http2 has an unexpected stream handler; the HTTP/2 fast path is off');
    const compat = own[0] as StreamListener;
    const h2 = this.h2;
    h2.removeListener('stream', compat);
    fast.handOver = (stream, headers, flags, rawHeaders) => compat.call(h2, stream, headers, flags, rawHeaders);
    h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
      if (!fast.take(stream, headers, flags, rawHeaders)) compat.call(h2, stream, headers, flags, rawHeaders);
    });
  }

  private sni(servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void): void {
    const name = servername.toLowerCase().replace(/\.$/, '');
    const port = this.certificates();
    if (!port) return cb(new Error('no certificates are configured'));
    port.forServerName(name).then(
      (pair) => {
        if (!pair) return cb(new Error(`no certificate for ${name}`));
        let ctx = this.contexts.get(pair.cert);
        if (!ctx) {
          try {
            ctx = tls.createSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2', honorCipherOrder: true });
          } catch (err) {
            this.log.error({ err: (err as Error).message, servername: name }, 'edge: the certificate of a server name cannot be used');
            return cb(new Error(`the certificate for ${name} cannot be used`));
          }
          if (this.contexts.size >= MAX_CONTEXTS) this.contexts.clear();
          this.contexts.set(pair.cert, ctx);
        }
        cb(null, ctx);
      },
      (err: Error) => {
        this.log.warn({ err: err.message, servername: name }, 'edge: could not read the certificate of a server name');
        cb(new Error(`no certificate for ${name}`));
      },
    );
  }

  /** An `acme-tls/1` handshake: the name's pending TLS-ALPN-01 certificate (never cached), else no certificate. */
  private alpnChallenge(servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void): void {
    const name = servername.toLowerCase().replace(/\.$/, '');
    const port = this.certificates();
    if (!port?.tlsAlpn01) return cb(new Error('TLS-ALPN-01 is not answered here'));
    port.tlsAlpn01(name).then(
      (pair) => {
        if (!pair) return cb(new Error(`no TLS-ALPN-01 challenge is pending for ${name}`));
        try {
          cb(null, tls.createSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' }));
        } catch (err) {
          this.log.error({ err: (err as Error).message, servername: name }, 'edge: the TLS-ALPN-01 certificate of a server name cannot be used');
          cb(new Error(`the TLS-ALPN-01 certificate for ${name} cannot be used`));
        }
      },
      (err: Error) => {
        this.log.warn({ err: err.message, servername: name }, 'edge: could not read the TLS-ALPN-01 challenge of a server name');
        cb(new Error(`no TLS-ALPN-01 challenge for ${name}`));
      },
    );
  }

  listen(host: string, port: number): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const a = this.server.address() as net.AddressInfo | null;
        resolve({ host, port: a ? a.port : port });
      });
    });
  }

  /** The bound port (null before it listens). */
  port(): number | null {
    const a = this.server.address();
    return a && typeof a === 'object' ? a.port : null;
  }

  /**
   * Stops accepting, closes HTTP/2 connections gracefully (destroyed after 2 s). The HTTP/1.1 ones
   * belong to the edge's node:http server, which its own close ends.
   */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
    for (const s of this.sessions) s.close();
    const timer = setTimeout(() => {
      for (const s of this.sessions) s.destroy();
    }, 2000);
    timer.unref();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2500).unref())]);
    clearTimeout(timer);
    for (const s of this.sessions) s.destroy();
    this.contexts.clear();
  }
}
