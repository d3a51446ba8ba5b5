import { positiveInt } from '../config-hardening.js';
import { parseTrustedProxies, type TrustedProxies } from '../lib/trusted-proxies.js';

/**
 * The edge's limits against slow and greedy clients (contract section 17, docs/edge.md). The defaults
 * are the contract's; the variables exist so tests can shrink them (named like the API's, in ms).
 */
export interface EdgeLimits {
  /** Request headers must arrive within this (BERTH_EDGE_HEADERS_TIMEOUT_MS, 30 s). */
  headersTimeoutMs: number;
  /** A request body idle this long is cut (BERTH_EDGE_BODY_IDLE_TIMEOUT_MS, 30 s). */
  bodyIdleMs: number;
  /** A whole request (headers and body) must arrive within this (BERTH_EDGE_REQUEST_TIMEOUT_MS, 120 s). */
  requestTimeoutMs: number;
  /** Open connections per client address; the next one is answered 503 (BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS, 256). */
  maxConnectionsPerAddress: number;
  /** Proxies whose X-Forwarded-For names the client (BERTH_TRUSTED_PROXIES, none). */
  trustedProxies: TrustedProxies;
  /** Plain GET and HEAD requests take the raw-socket fast path (src/edge/fast/; BERTH_EDGE_FAST_PATH=0 turns it off). */
  fastPath: boolean;
}

/** The limits from the environment; a malformed value throws (the edge does not start). */
export function edgeLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): EdgeLimits {
  const headersTimeoutMs = positiveInt(env, 'BERTH_EDGE_HEADERS_TIMEOUT_MS', 30_000);
  return {
    headersTimeoutMs,
    bodyIdleMs: positiveInt(env, 'BERTH_EDGE_BODY_IDLE_TIMEOUT_MS', 30_000),
    // node:http refuses a headers timeout above the request timeout.
    requestTimeoutMs: Math.max(headersTimeoutMs, positiveInt(env, 'BERTH_EDGE_REQUEST_TIMEOUT_MS', 120_000)),
    maxConnectionsPerAddress: positiveInt(env, 'BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS', 256),
    trustedProxies: parseTrustedProxies(env.BERTH_TRUSTED_PROXIES),
    fastPath: env.BERTH_EDGE_FAST_PATH !== '0',
  };
}
