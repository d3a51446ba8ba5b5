import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('health, envelope and request ids', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('GET /api/health answers status, mode, version and database', async () => {
    const res = await server.api().get('/api/health');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.status, 'ok');
    assert.equal(res.body.data.mode, 'self-hosted');
    assert.match(res.body.data.version, /^\d+\.\d+\.\d+/);
    assert.equal(res.body.data.database, process.env.DATABASE_URL ? 'postgres' : 'sqlite');
  });

  it('every answer carries an X-Request-Id, and errors repeat it in the body', async () => {
    const a = await server.api().get('/api/nope');
    const b = await server.api().get('/api/nope');
    assert.equal(a.status, 404);
    assert.equal(a.body.error.code, 'NOT_FOUND');
    assert.ok(a.body.error.requestId);
    assert.equal(a.headers.get('x-request-id'), a.body.error.requestId);
    assert.notEqual(a.body.error.requestId, b.body.error.requestId);
  });

  it('no credential on a protected route is 401 UNAUTHENTICATED', async () => {
    const res = await server.api().get('/api/auth/me');
    assert.equal(res.status, 401);
    assert.equal(res.body.error.code, 'UNAUTHENTICATED');
  });

  it('a malformed Authorization header is 401', async () => {
    for (const h of ['Basic abc', 'Bearer', 'Bearer a b', 'berth_pat_x']) {
      const res = await server.api().get('/api/auth/me', { authorization: h });
      assert.equal(res.status, 401, h);
    }
  });

  it('malformed JSON is 400 VALIDATION_FAILED, a wrong content type is 415, an oversize body 413', async () => {
    const bad = await server.api().post('/api/auth/login', '{"email":', { 'content-type': 'application/json' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'VALIDATION_FAILED');
    const wrongType = await server.api().post('/api/auth/login', 'email=a', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(wrongType.status, 415);
    assert.equal(wrongType.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
    const big = await server.api().post('/api/auth/login', { email: 'x'.repeat(2 * 1024 * 1024), password: 'y' });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'PAYLOAD_TOO_LARGE');
  });

  it('NUL characters in a body string or in the URL are 400, never a database error', async () => {
    const body = await server.api().post('/api/auth/signup', { email: 'nul@example.test', password: 'pass\u0000word' });
    assert.equal(body.status, 400);
    assert.equal(body.body.error.field, 'password');
    const url = await server.api().get('/api/auth/tokens/%00');
    assert.equal(url.status, 400);
  });

  it('validation errors name the field with a dot path, and bodies are not coerced', async () => {
    const res = await server.api().post('/api/auth/signup', { email: 42, password: 'password1' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'email');
    assert.match(res.body.error.message, /email must be a string/);
    const missing = await server.api().post('/api/auth/signup', { email: 'a@b.co' });
    assert.equal(missing.body.error.field, 'password');
    assert.match(missing.body.error.message, /password is required/);
  });
});
