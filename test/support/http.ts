import assert from 'node:assert/strict';
import http from 'node:http';

export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A thin fetch wrapper for tests: JSON in, JSON out, never throws on a status. */
export class HttpClient {
  constructor(
    readonly base: string,
    readonly token?: string,
    readonly defaults: Record<string, string> = {},
  ) {}

  with(headers: Record<string, string>): HttpClient {
    return new HttpClient(this.base, this.token, { ...this.defaults, ...headers });
  }

  async request<T = any>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse<T>> {
    const h: Record<string, string> = { ...this.defaults, ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    let payload: string | Uint8Array | undefined;
    if (body !== undefined) {
      if (typeof body === 'string' || Buffer.isBuffer(body)) payload = body;
      else payload = JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
    }
    const res = await fetch(this.base + url, { method, headers: h, body: payload as BodyInit | undefined, signal: AbortSignal.timeout(30000) });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get<T = any>(url: string, headers?: Record<string, string>) {
    return this.request<T>('GET', url, undefined, headers);
  }
  post<T = any>(url: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', url, body, headers);
  }
  put<T = any>(url: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PUT', url, body, headers);
  }
  patch<T = any>(url: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PATCH', url, body, headers);
  }
  delete<T = any>(url: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('DELETE', url, body, headers);
  }
}

/** Asserts an error answer: status, code and (when given) the named field, with its requestId. */
export function assertError(r: HttpResponse, status: number, code: string, field?: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.body?.error?.code, code, r.text);
  if (field !== undefined) assert.equal(r.body.error.field, field, r.text);
  assert.ok(r.body.error.requestId, 'error carries a requestId');
}

export interface EdgeAnswer {
  status: number;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A request to the edge listening on 127.0.0.1:`port`, for the site `host` (fetch cannot set the
 * Host header), bounded by `timeoutMs` (default 20 s).
 */
export function edgeRequest(port: number, host: string, pathName = '/', opts: { method?: string; body?: string; timeoutMs?: number } = {}): Promise<EdgeAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathName, method: opts.method ?? 'GET', headers: { host }, timeout: opts.timeoutMs ?? 20000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('edge request timed out')));
    if (opts.body) req.write(opts.body);
    req.end();
  });
}

/** One server-sent event; `data` is parsed as JSON when it is JSON. */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

/** The event of one SSE block (the text between blank lines); undefined for a comment-only block. */
export function parseSseBlock(block: string): SseEvent | undefined {
  const lines = block.split('\n').filter((l) => l && !l.startsWith(':'));
  if (!lines.length) return undefined;
  const ev: SseEvent = { event: 'message', data: '' };
  const data: string[] = [];
  for (const l of lines) {
    if (l.startsWith('id: ')) ev.id = l.slice(4);
    else if (l.startsWith('event: ')) ev.event = l.slice(7);
    else if (l.startsWith('data: ')) data.push(l.slice(6));
  }
  try {
    ev.data = JSON.parse(data.join('\n'));
  } catch {
    ev.data = data.join('\n');
  }
  return ev;
}
