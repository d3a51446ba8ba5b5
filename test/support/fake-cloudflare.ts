/**
 * A fake of Cloudflare's API v4 DNS endpoints for tests: node:http on 127.0.0.1 and a free port, the
 * documented envelope `{ success, errors: [{ code, message }], messages, result }`, a bearer API
 * token checked on every call, and the calls the DNS-01 provider makes:
 *
 * - `GET  /client/v4/zones?name=<zone>` (the zones named so; `[]` when none);
 * - `GET  /client/v4/zones/:zone_id/dns_records?type=&name=&content=`;
 * - `POST /client/v4/zones/:zone_id/dns_records` `{ type, name, content, ttl }` (81058 when identical);
 * - `DELETE /client/v4/zones/:zone_id/dns_records/:id` (81044 when there is no such record).
 *
 * Point the provider at `baseUrl`. Pass a DNS stub's `txt` map as `txt` and the TXT records the fake
 * holds are mirrored into it, so a resolver (Pebble's DNS-01 lookups) sees what the provider published.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';

export interface FakeCloudflareRecord {
  id: string;
  zoneId: string;
  type: string;
  name: string;
  content: string;
  ttl: number;
}

export interface FakeCloudflare {
  /** `http://127.0.0.1:<port>`: the provider's `baseUrl`. */
  baseUrl: string;
  token: string;
  /** zone name -> zone id. */
  zones: Map<string, string>;
  records: FakeCloudflareRecord[];
  /** Every request as `METHOD /path?query` (after the token check passed or failed). */
  requests: string[];
  /** Answers every call with this HTTP status and a failed envelope while set (an outage). */
  failWith: number | null;
  /** Adds a zone; answers its id. */
  addZone(name: string): string;
  /** The TXT values held for a name. */
  txtValues(name: string): string[];
  close(): Promise<void>;
}

export async function startFakeCloudflare(opts: { token?: string; zones?: string[]; txt?: Map<string, string[]> } = {}): Promise<FakeCloudflare> {
  const token = opts.token ?? `cf-${randomBytes(12).toString('hex')}`;
  const zones = new Map<string, string>();
  const records: FakeCloudflareRecord[] = [];
  const requests: string[] = [];
  const mirror = opts.txt;
  const newId = () => randomBytes(16).toString('hex');

  const syncMirror = (name: string) => {
    if (!mirror) return;
    const values = records.filter((r) => r.type === 'TXT' && r.name === name).map((r) => r.content);
    if (values.length) mirror.set(name, values);
    else mirror.delete(name);
  };

  const fake: FakeCloudflare = {
    baseUrl: '',
    token,
    zones,
    records,
    requests,
    failWith: null,
    addZone(name: string) {
      const id = newId();
      zones.set(name.toLowerCase(), id);
      return id;
    },
    txtValues: (name: string) => records.filter((r) => r.type === 'TXT' && r.name === name.toLowerCase()).map((r) => r.content),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  for (const z of opts.zones ?? []) fake.addZone(z);

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const ok = (res: http.ServerResponse, result: unknown, status = 200) => send(res, status, { success: true, errors: [], messages: [], result });
  const fail = (res: http.ServerResponse, status: number, code: number, message: string) =>
    send(res, status, { success: false, errors: [{ code, message }], messages: [], result: null });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      requests.push(`${req.method} ${url.pathname}${url.search}`);
      if (fake.failWith !== null) return fail(res, fake.failWith, 10001, 'service unavailable');
      const auth = req.headers.authorization ?? '';
      if (!auth.startsWith('Bearer ')) return fail(res, 400, 6003, 'Invalid request headers');
      if (auth.slice('Bearer '.length) !== token) return fail(res, 403, 10000, 'Authentication error');

      const parts = url.pathname.split('/').filter(Boolean);
      if (parts[0] !== 'client' || parts[1] !== 'v4' || parts[2] !== 'zones') return fail(res, 404, 7003, 'Could not route to /' + parts.join('/'));
      const zoneId = parts[3];
      if (!zoneId) {
        if (req.method !== 'GET') return fail(res, 405, 10000, 'method not allowed');
        const name = url.searchParams.get('name')?.toLowerCase();
        const list = [...zones].filter(([n]) => !name || n === name).map(([n, id]) => ({ id, name: n, status: 'active' }));
        return ok(res, list);
      }
      if (![...zones.values()].includes(zoneId)) return fail(res, 404, 7003, 'Could not route to /zones/' + zoneId + ', perhaps your object identifier is invalid?');
      if (parts[4] !== 'dns_records') return fail(res, 404, 7003, 'Could not route');
      const recordId = parts[5];
      if (!recordId && req.method === 'GET') {
        const q = url.searchParams;
        const list = records.filter(
          (r) =>
            r.zoneId === zoneId &&
            (!q.get('type') || r.type === q.get('type')) &&
            (!q.get('name') || r.name === q.get('name')!.toLowerCase()) &&
            (!q.get('content') || r.content === q.get('content')),
        );
        return ok(res, list.map(present));
      }
      if (!recordId && req.method === 'POST') {
        let body: { type?: unknown; name?: unknown; content?: unknown; ttl?: unknown };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return fail(res, 400, 9207, 'Request body is invalid.');
        }
        if (body.type !== 'TXT') return fail(res, 400, 9004, 'This record type is not supported by the fake');
        if (typeof body.name !== 'string' || typeof body.content !== 'string') return fail(res, 400, 9005, 'name and content are required');
        const ttl = typeof body.ttl === 'number' ? body.ttl : 1;
        if (ttl !== 1 && (ttl < 60 || ttl > 86400)) return fail(res, 400, 9141, 'Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic.');
        const name = body.name.toLowerCase().replace(/\.$/, '');
        const zoneName = [...zones].find(([, id]) => id === zoneId)![0];
        if (name !== zoneName && !name.endsWith(`.${zoneName}`)) return fail(res, 400, 9005, 'Content for record is invalid: name is outside the zone');
        if (records.some((r) => r.zoneId === zoneId && r.type === 'TXT' && r.name === name && r.content === body.content)) {
          return fail(res, 400, 81058, 'An identical record already exists.');
        }
        const record: FakeCloudflareRecord = { id: newId(), zoneId, type: 'TXT', name, content: body.content, ttl };
        records.push(record);
        syncMirror(name);
        return ok(res, present(record));
      }
      if (recordId && req.method === 'DELETE') {
        const i = records.findIndex((r) => r.zoneId === zoneId && r.id === recordId);
        if (i < 0) return fail(res, 404, 81044, 'Record does not exist.');
        const [gone] = records.splice(i, 1);
        syncMirror(gone.name);
        return ok(res, { id: recordId });
      }
      return fail(res, 405, 10000, 'method not allowed');
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  fake.baseUrl = `http://127.0.0.1:${port}`;
  return fake;
}

function present(r: FakeCloudflareRecord) {
  return { id: r.id, zone_id: r.zoneId, type: r.type, name: r.name, content: r.content, ttl: r.ttl, proxied: false, proxiable: false };
}
