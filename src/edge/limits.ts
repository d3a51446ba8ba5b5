import { parseTrustedProxies, type TrustedProxies } from '../lib/trusted-proxies.js';

/**
 * The edge's limits against slow and greedy clients (contract section 17, docs/edge.md). The defaults
 * are the contract's; the environment can change them (tests use small values).
 */
export interface EdgeLimits {
  /** Request headers must arrive within this (BERTH_EDGE_HEADERS_TIMEOUT_SECONDS, 30). */
  headersTimeoutMs: number;
  /** A request body idle this long is cut (BERTH_EDGE_BODY_IDLE_SECONDS, 30). */
  bodyIdleMs: number;
  /** A whole request (headers and body) must arrive within this (BERTH_EDGE_REQUEST_TIMEOUT_SECONDS, 120). */
  requestTimeoutMs: number;
  /** Open connections per client address; the next one is answered 503 (BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS, 256). */
  maxConnectionsPerAddress: number;
  /** Proxies whose X-Forwarded-For names the client (BERTH_TRUSTED_PROXIES, none). */
  trustedProxies: TrustedProxies;
}

function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const n = Number(env[name]);
  return Math.max(1, Math.round((Number.isFinite(n) && n > 0 ? n : fallback) * 1000));
}

export function edgeLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): EdgeLimits {
  const headersTimeoutMs = seconds(env, 'BERTH_EDGE_HEADERS_TIMEOUT_SECONDS', 30);
  const max = Number(env.BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS);
  return {
    headersTimeoutMs,
    bodyIdleMs: seconds(env, 'BERTH_EDGE_BODY_IDLE_SECONDS', 30),
    // node:http refuses a headers timeout above the request timeout.
    requestTimeoutMs: Math.max(headersTimeoutMs, seconds(env, 'BERTH_EDGE_REQUEST_TIMEOUT_SECONDS', 120)),
    maxConnectionsPerAddress: Number.isInteger(max) && max > 0 ? max : 256,
    trustedProxies: parseTrustedProxies(env.BERTH_TRUSTED_PROXIES),
  };
}
