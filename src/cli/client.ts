import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `~/.config/berth/config.json` (or `$XDG_CONFIG_HOME/berth`): the server URL and the token. */
export interface ClientConfig {
  server?: string;
  token?: string;
  email?: string;
  /**
   * Tokens `berth switch` minted (or found in use), by org id, each with the server it was made on:
   * switching back to an org reuses its token while it still works.
   */
  orgTokens?: Record<string, { server: string; token: string }>;
}

export function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'berth');
}

export function configFile(): string {
  return path.join(configDir(), 'config.json');
}

export function readClientConfig(): ClientConfig {
  try {
    return JSON.parse(readFileSync(configFile(), 'utf8')) as ClientConfig;
  } catch {
    return {};
  }
}

export function writeClientConfig(cfg: ClientConfig): void {
  mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  writeFileSync(configFile(), JSON.stringify(cfg, null, 2) + '\n', { mode: 0o600 });
  chmodSync(configFile(), 0o600);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export interface ApiClient {
  server: string;
  request<T = unknown>(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** A streaming GET (Server-Sent Events): the open body, or the error envelope as ApiError. */
  stream(url: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>>;
}

/** The error a non-2xx answer's body (the envelope of contract section 3, or whatever came) stands for. */
export function apiErrorFrom(status: number, statusText: string, text: string): ApiError {
  let json: any = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  const err = json?.error;
  return new ApiError(status, err?.code ?? 'HTTP_' + status, err?.message ?? (text.slice(0, 200) || statusText), err?.field);
}

const apiErrorOf = (res: Response, text: string): ApiError => apiErrorFrom(res.status, res.statusText, text);

/** A small JSON client over fetch: unwraps `{ data }`, turns the error envelope into ApiError. */
export function apiClient(server: string, token?: string): ApiClient {
  const base = server.replace(/\/+$/, '');
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return {
    server: base,
    async request<T>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
      const h: Record<string, string> = { accept: 'application/json', ...auth, ...headers };
      if (body !== undefined) h['content-type'] = 'application/json';
      const res = await fetch(base + url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) throw apiErrorOf(res, text);
      let json: any = undefined;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return (json && typeof json === 'object' && 'data' in json ? json.data : json) as T;
    },
    async stream(url: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
      const res = await fetch(base + url, { headers: { accept: 'text/event-stream', ...auth }, signal });
      if (!res.ok) throw apiErrorOf(res, await res.text());
      if (!res.body) throw new Error(`${url} answered no stream`);
      return res.body;
    },
  };
}

/** The client for the saved login, or a clear message telling how to log in. */
export function savedClient(opts: { server?: string; token?: string } = {}): ApiClient {
  const cfg = readClientConfig();
  const server = opts.server ?? process.env.BERTH_SERVER ?? cfg.server;
  const token = opts.token ?? process.env.BERTH_TOKEN ?? cfg.token;
  if (!server || !token) throw new Error('not logged in: run `berth login --server URL --email EMAIL` first (or set BERTH_SERVER and BERTH_TOKEN)');
  return apiClient(server, token);
}
