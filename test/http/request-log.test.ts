import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { defineRoute, type ModuleDef } from '../../src/http/route.js';
import { createLogger } from '../../src/lib/logger.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/** Two public test routes: one writes a warning through `req.log`, one fails with an error of no known kind. */
const probe: ModuleDef = {
  name: 'request-log-probe',
  routes: [
    defineRoute({
      method: 'GET',
      url: '/api/test/request-log/warn',
      summary: 'test: a warning through req.log',
      access: 'public',
      handler: ({ req }) => {
        req.log.warn({ probe: true }, 'probe warning');
        return { ok: true };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/test/request-log/fail',
      summary: 'test: an unexpected error',
      access: 'public',
      handler: () => {
        throw new Error('probe failure');
      },
    }),
  ],
};

describe('request logs below debug (Fastify without a logger of its own)', () => {
  let server: TestServer;
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  before(async () => {
    server = await startTestServer({ logLevel: 'info', build: { modules: [probe], logger: createLogger('info', sink) } });
  });
  after(() => server.close());

  it('a line a route writes through req.log reaches Berth’s logger with the request’s id', async () => {
    const res = await server.api().get('/api/test/request-log/warn');
    assert.equal(res.status, 200);
    const line = lines.find((l) => l.msg === 'probe warning');
    assert.ok(line, 'the warning was logged');
    assert.equal(line.reqId, res.headers.get('x-request-id'));
    assert.equal(line.probe, true);
  });

  it('an unexpected error is logged with its request id and stack, and answered 500 without them', async () => {
    const res = await server.api().get('/api/test/request-log/fail');
    assert.equal(res.status, 500);
    assert.doesNotMatch(JSON.stringify(res.body), /probe failure/);
    const line = lines.find((l) => l.msg === 'unhandled error');
    assert.ok(line, 'the error was logged');
    assert.equal(line.reqId, res.headers.get('x-request-id'));
    assert.match(String((line.err as { stack?: string }).stack), /probe failure/);
  });

  it('writes no per-request lines of its own at info', async () => {
    await server.api().get('/api/health');
    assert.equal(lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed').length, 0);
  });
});
