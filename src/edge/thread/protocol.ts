import type { EdgeLimits } from '../limits.js';
import type { RuleRow } from '../rules.js';
import type { StaticSite } from '../backend.js';

/**
 * What crosses between the main thread and the edge's worker thread (docs/edge.md, "Where the edge
 * runs"). Everything is plain data (structured clone): no functions, no class instances.
 */

/** The worker's init data: where to listen and the limits the main thread resolved from its environment. */
export interface EdgeThreadInit {
  host: string;
  port: number;
  /** The TLS listener's port (0: a free one), null: none. */
  httpsPort: number | null;
  limits: Omit<EdgeLimits, 'trustedProxies'> & { trustedProxies: string[] };
  /** The main thread answers ACME HTTP-01 challenges (a certificates port is provided). */
  acme: boolean;
  /** The main thread has certificates for the TLS listener. */
  certificates: boolean;
}

/** A host's target as the main thread answers it: EdgeTarget with its rule rows instead of compiled rules. */
export interface WireTarget {
  projectId: string;
  unavailable: string | null;
  ruleRows: RuleRow[];
  static?: StaticSite | null;
  httpsRedirect?: boolean;
  hsts?: boolean;
}

/**
 * An app's address; `lanes`: the addresses of an app behind several (a Swarm service's tasks), which
 * the worker rotates over per request and asks for again after LANES_FRESH_MS (null: only `host:port`).
 */
export interface WireUpstream {
  host: string;
  port: number;
  key: string;
  lanes: { host: string; port: number; key: string }[] | null;
}

export type AskKind = 'lookup' | 'upstream' | 'acme' | 'cert' | 'alpn';

/** Worker -> main. */
export type FromWorker =
  | { t: 'listening'; port: number; httpsPort: number | null }
  | { t: 'listen-failed'; which: 'http' | 'https'; code: string | undefined; message: string }
  | { t: 'ask'; id: number; kind: AskKind; arg: string }
  /**
   * Requests served: flat, 8 values per entry (app, ts, method, path, status, durationMs, ip, bytes); apps
   * served from an upstream; apps whose open requests went from none to some (`opened`) or back
   * (`idle`) since the last batch, each named by its state at the batch.
   */
  | { t: 'batch'; entries: (string | number)[]; touched: string[]; opened: string[]; idle: string[] }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg: string }
  | { t: 'answer'; id: number; value: number }
  | { t: 'closed' };

/** Main -> worker. */
export type ToWorker =
  | { t: 'answer'; id: number; ok: true; value: unknown }
  | { t: 'answer'; id: number; ok: false; message: string }
  /** Routes changed: every cached host goes. */
  | { t: 'invalidate' }
  /** The supervisor's state of an app changed: its cached address (and the hosts naming it) go. */
  | { t: 'app'; app: string }
  /** A certificate was issued, renewed or removed on this server: every cached server name's certificate goes. */
  | { t: 'certs' }
  | { t: 'connections'; id: number; address: string }
  /** Send the batch now (answered once it is sent: a read of the request log after this sees every request answered before). */
  | { t: 'flush'; id: number }
  | { t: 'close' };

/** Values per request entry in a batch. */
export const ENTRY_WIDTH = 8;
