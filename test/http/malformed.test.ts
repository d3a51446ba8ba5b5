import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/** Bodies no route should ever answer with a 5xx. */
function corpus(bodySchema: any): Array<[string, string | undefined, string]> {
  const out: Array<[string, string | undefined, string]> = [
    ['invalid JSON', '{"a":', 'application/json'],
    ['truncated string', '{"name":"abc', 'application/json'],
    ['array', '[]', 'application/json'],
    ['null', 'null', 'application/json'],
    ['string', '"hello"', 'application/json'],
    ['number', '42', 'application/json'],
    ['empty object', '{}', 'application/json'],
    ['empty body', '', 'application/json'],
    ['__proto__ key', '{"__proto__":{"isAdmin":true},"name":"x"}', 'application/json'],
    ['constructor.prototype', '{"constructor":{"prototype":{"isAdmin":true}}}', 'application/json'],
    ['deep nesting', '['.repeat(5000) + ']'.repeat(5000), 'application/json'],
    ['deep object nesting', '{"a":'.repeat(3000) + '1' + '}'.repeat(3000), 'application/json'],
    ['1 MB string', JSON.stringify({ name: 'x'.repeat(1024 * 1024) }), 'application/json'],
    ['900 KB string', JSON.stringify({ name: 'x'.repeat(900 * 1024) }), 'application/json'],
    ['form body', 'a=1&b=2', 'application/x-www-form-urlencoded'],
    ['text body', 'hello', 'text/plain'],
    ['unicode junk', JSON.stringify({ name: '\u0000\ud800\uffff' }), 'application/json'],
  ];
  const props = bodySchema?.properties ?? {};
  const wrong: Record<string, unknown> = {};
  const nulls: Record<string, unknown> = {};
  for (const [k, s] of Object.entries<any>(props)) {
    const t = s.type ?? (s.anyOf ? 'union' : 'unknown');
    wrong[k] = t === 'string' ? 42 : t === 'number' || t === 'integer' ? 'not-a-number' : t === 'boolean' ? 'yes' : t === 'array' ? { not: 'an array' } : t === 'object' ? 'not-an-object' : [1, 2];
    nulls[k] = null;
  }
  out.push(['every field of the wrong type', JSON.stringify(wrong), 'application/json']);
  out.push(['every field null', JSON.stringify(nulls), 'application/json']);
  const huge: Record<string, unknown> = {};
  for (const k of Object.keys(props)) huge[k] = 'y'.repeat(20000);
  out.push(['every field a 20 KB string', JSON.stringify(huge), 'application/json']);
  const negative: Record<string, unknown> = {};
  for (const [k, s] of Object.entries<any>(props)) negative[k] = s.type === 'number' || s.type === 'integer' ? -1e308 : s.type === 'array' ? Array(10000).fill('z') : s.type === 'string' ? '' : {};
  out.push(['extreme values', JSON.stringify(negative), 'application/json']);
  return out;
}

describe('malformed bodies never cause a 5xx', () => {
  let server: TestServer;
  let owner: TestUser;
  before(async () => {
    server = await startTestServer();
    owner = await createUser(server);
  });
  after(() => server.close());

  it('every write route answers the corpus with a 4xx (or a success), never a 5xx', async () => {
    const doc = (await server.api().get('/api/openapi.json')).body;
    const failures: string[] = [];
    let sent = 0;
    for (const r of server.app.berth.routes) {
      if (r.method === 'GET') continue;
      // Signing in or up with junk is covered; logging out or revoking our own token would end the test's credential.
      if (r.url === '/api/auth/logout') continue;
      const op = doc.paths[r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')][r.method.toLowerCase()];
      const schema = op.requestBody?.content?.['application/json']?.schema;
      const url = r.url.replace(/:([A-Za-z0-9_]+)/g, 'does_not_exist_0');
      for (const [name, body, type] of corpus(schema)) {
        const res = await server.api(owner.token).request(r.method, url, body, { 'content-type': type });
        sent++;
        if (res.status >= 500) failures.push(`${r.method} ${r.url} [${name}] -> ${res.status} ${res.text.slice(0, 200)}`);
        else if (res.status >= 400) {
          assert.ok(res.body?.error?.code, `${r.method} ${r.url} [${name}] answered ${res.status} without the error envelope: ${res.text.slice(0, 100)}`);
        }
      }
    }
    assert.ok(sent > 50);
    assert.deepEqual(failures, []);
    // The server is still healthy.
    assert.equal((await server.api().get('/api/health')).status, 200);
  });
});
