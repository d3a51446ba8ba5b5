import { ConfigError } from './config-error.js';
import { OutboundAllowError, parseOutboundAllow } from './lib/outbound.js';
import { parseTrustedProxies, TrustedProxiesError } from './lib/trusted-proxies.js';

/**
 * Settings of the outside security review's fixes (issue 15, contract section 17, docs/security.md).
 * The defaults are the contract's; the `*_MS` and limit variables exist so tests can shrink them.
 */
export interface HardeningConfig {
  /** BERTH_OUTBOUND_ALLOW: hosts and CIDRs user-supplied outbound URLs may reach although internal. */
  outboundAllow: string[];
  /** BERTH_TRUSTED_PROXIES: the only sources whose X-Forwarded-For is believed. */
  trustedProxies: string[];
  api: {
    /** Time to receive a request's headers (BERTH_API_HEADERS_TIMEOUT_MS, 30 s). */
    headersTimeoutMs: number;
    /** Longest pause inside a request body (BERTH_API_BODY_IDLE_TIMEOUT_MS, 30 s). */
    bodyIdleTimeoutMs: number;
    /** Time to receive a whole non-upload request (BERTH_API_REQUEST_TIMEOUT_MS, 120 s). */
    requestTimeoutMs: number;
    /** Longest pause inside an upload body; uploads have no whole-request cap (BERTH_API_UPLOAD_IDLE_TIMEOUT_MS, 60 s). */
    uploadIdleTimeoutMs: number;
    /** Open connections per client address (BERTH_API_MAX_CONNECTIONS_PER_ADDRESS, 64). */
    maxConnectionsPerAddress: number;
  };
  uploads: {
    /** Open (unconsumed, unexpired) sessions per user (BERTH_UPLOAD_MAX_OPEN_SESSIONS, 5). */
    maxOpenSessionsPerUser: number;
    /** Stored bytes of unconsumed uploads per org (BERTH_UPLOAD_MAX_ORG_BYTES, 2 GiB). */
    maxOrgBytes: number;
  };
}

/** A positive whole number from `env[name]`, else `fallback`; anything else stops start-up with a message naming it. */
export function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new ConfigError(`${name} must be a positive whole number (got "${raw}")`);
  return n;
}

export function loadHardening(env: NodeJS.ProcessEnv): HardeningConfig {
  let outboundAllow: string[];
  let trustedProxies: string[];
  try {
    outboundAllow = parseOutboundAllow(env.BERTH_OUTBOUND_ALLOW);
    trustedProxies = [...parseTrustedProxies(env.BERTH_TRUSTED_PROXIES).ranges];
  } catch (e) {
    if (e instanceof OutboundAllowError || e instanceof TrustedProxiesError) throw new ConfigError(e.message);
    throw e;
  }
  return {
    outboundAllow,
    trustedProxies,
    api: {
      headersTimeoutMs: positiveInt(env, 'BERTH_API_HEADERS_TIMEOUT_MS', 30_000),
      bodyIdleTimeoutMs: positiveInt(env, 'BERTH_API_BODY_IDLE_TIMEOUT_MS', 30_000),
      requestTimeoutMs: positiveInt(env, 'BERTH_API_REQUEST_TIMEOUT_MS', 120_000),
      uploadIdleTimeoutMs: positiveInt(env, 'BERTH_API_UPLOAD_IDLE_TIMEOUT_MS', 60_000),
      maxConnectionsPerAddress: positiveInt(env, 'BERTH_API_MAX_CONNECTIONS_PER_ADDRESS', 64),
    },
    uploads: {
      maxOpenSessionsPerUser: positiveInt(env, 'BERTH_UPLOAD_MAX_OPEN_SESSIONS', 5),
      maxOrgBytes: positiveInt(env, 'BERTH_UPLOAD_MAX_ORG_BYTES', 2 * 1024 ** 3),
    },
  };
}
