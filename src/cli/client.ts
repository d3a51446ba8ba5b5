import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../api-types/schema.js';

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
  /** The bearer token every request carries (none: signed out); `berth services connect` sends it on its tunnels. */
  token?: string;
  /**
   * The API, typed from its OpenAPI document (src/api-types/schema.d.ts, the dashboard's types too)
   * through openapi-fetch: `answer(client.api.GET('/api/projects/{id}', { params: { path: { id } } }))`.
   */
  api: Client<paths>;
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

/** What an openapi-fetch call resolves to. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Most answers are `{ data }`: that is what the commands want; any other body comes whole. */
export type Unwrapped<T> = T extends { data: infer D } ? D : T;

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type SuccessOf<O> = O extends { responses: infer R } ? { [K in keyof R]: K extends 200 | 201 | 202 ? JsonOf<R[K]> : never }[keyof R] : never;

/** What `answer()` of a call of `path` with `method` resolves to: `Answered<'/api/deployments/{id}', 'get'>`. */
export type Answered<P extends keyof paths, M extends keyof paths[P]> = Unwrapped<SuccessOf<paths[P][M]>>;

/** The JSON body a call of `path` with `method` takes, for bodies built up field by field. */
export type RequestBody<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

/**
 * Awaits a call of `client.api`: the answer's `data` when the body is `{ data }` (else the body
 * itself; undefined when there is none). A non-2xx answer throws ApiError from the error envelope.
 */
export async function answer<T>(call: Promise<Answer<T>>): Promise<Unwrapped<NonNullable<T>>> {
  const { data, error, response } = await call;
  if (!response.ok) {
    // openapi-fetch hands over the body parsed when it is JSON, as text otherwise.
    const text = error === undefined ? '' : typeof error === 'string' ? error : JSON.stringify(error);
    throw apiErrorOf(response, text);
  }
  const body = data as any;
  return (body && typeof body === 'object' && 'data' in body ? body.data : body) as Unwrapped<NonNullable<T>>;
}

/** The typed client of a server, with the token (if any) on every request. */
export function apiClient(server: string, token?: string): ApiClient {
  const base = server.replace(/\/+$/, '');
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return {
    server: base,
    token,
    api: createClient<paths>({ baseUrl: base, headers: { accept: 'application/json', ...auth } }),
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
