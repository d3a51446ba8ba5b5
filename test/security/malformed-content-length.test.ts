/**
 * Issue 15, point 7 (malformed Content-Length): Node's HTTP parser refused these requests and the
 * client got Fastify's bare `{"error":"Bad Request","message":"Client Error","statusCode":400}`
 * with no code and no request id. Now every one is the JSON error envelope (400 VALIDATION_FAILED
 * with a request id, also sent as X-Request-Id), and the connection is closed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/harness.js';
import { portOf, rawExchange } from './raw-http.js';

const MALFORMED: Record<string, string> = {
  'letters': 'Content-Length: abc\r\n',
  'negative': 'Content-Length: -1\r\n',
  'fraction': 'Content-Length: 1.5\r\n',
  'hex': 'Content-Length: 0x10\r\n',
  'plus sign': 'Content-Length: +2\r\n',
  'empty': 'Content-Length: \r\n',
  'two numbers': 'Content-Length: 2 3\r\n',
  'a list': 'Content-Length: 2, 3\r\n',
  'a list of equal values': 'Content-Length: 2, 2\r\n',
  'two headers': 'Content-Length: 2\r\nContent-Length: 3\r\n',
  'with Transfer-Encoding': 'Content-Length: 2\r\nTransfer-Encoding: chunked\r\n',
  'too large a number': 'Content-Length: 99999999999999999999999\r\n',
};

describe('malformed Content-Length answers the JSON error envelope', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  for (const [name, header] of Object.entries(MALFORMED)) {
    it(`${name}: 400 VALIDATION_FAILED with a request id, and the connection closes`, async () => {
      const a = await rawExchange(portOf(server.url), [`POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${header}\r\n{}`], { waitMs: 5000 });
      assert.equal(a.status, 400, a.text);
      assert.match(a.headers['content-type'] ?? '', /^application\/json/);
      assert.equal(a.json?.error?.code, 'VALIDATION_FAILED', a.text);
      assert.equal(typeof a.json.error.message, 'string');
      assert.match(a.json.error.requestId, /^req_/);
      assert.equal(a.headers['x-request-id'], a.json.error.requestId);
      assert.ok(a.closedByServer, 'the server closes the connection');
    });
  }

  it('a request line the parser cannot read gets the envelope too, and the server stays healthy', async () => {
    const a = await rawExchange(portOf(server.url), ['GARBAGE\r\n\r\n'], { waitMs: 5000 });
    assert.equal(a.status, 400, a.text);
    assert.equal(a.json?.error?.code, 'VALIDATION_FAILED');
    assert.equal((await server.api().get('/api/health')).status, 200);
  });
});
