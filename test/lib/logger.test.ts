import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger, redactUrl } from '../../src/lib/logger.js';
import { createUser } from '../support/factories.js';
import { startTestServer } from '../support/harness.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { stream, text: () => lines.join('') };
}

describe('log redaction', () => {
  it('pino censors authorization headers, cookies, tokens, passwords and secret fields', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.info({ req: { headers: { authorization: 'Bearer berth_pat_SECRET1', cookie: 'berth_session=SECRET2' } } }, 'request');
    log.info({ body: { password: 'SECRET3', token: 'SECRET4', secretAccessKey: 'SECRET5' } }, 'body');
    log.info({ password: 'SECRET6' }, 'top');
    const text = out.text();
    for (const s of ['SECRET1', 'SECRET2', 'SECRET3', 'SECRET4', 'SECRET5', 'SECRET6']) assert.ok(!text.includes(s), `${s} leaked: ${text}`);
    assert.ok(text.includes('[redacted]'));
  });

  it('token-like query parameters are stripped from logged URLs', () => {
    assert.equal(redactUrl('/api/projects/p/server-logs/stream?token=abc&x=1'), '/api/projects/p/server-logs/stream?token=[redacted]&x=1');
    assert.equal(redactUrl('/cb?code=zzz&state=yyy'), '/cb?code=[redacted]&state=[redacted]');
  });

  it('a debug-level server log of authenticated requests never contains the bearer token or the password', async () => {
    const out = capture();
    const server = await startTestServer({ logLevel: 'trace', build: { logger: createLogger('trace', out.stream) } });
    const u = await createUser(server);
    try {
      await fetch(`${server.url}/api/auth/me?token=QUERYSECRET`, { headers: { authorization: `Bearer ${u.token}` } });
      await fetch(`${server.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: u.email, password: u.password }) });
      await fetch(`${server.url}/api/auth/me`, { headers: { authorization: 'Bearer berth_pat_BADTOKEN' } });
    } finally {
      await server.close();
    }
    const text = out.text();
    assert.ok(text.length > 0);
    for (const s of ['berth_pat_', u.password, 'QUERYSECRET', 'berth_ses_']) assert.ok(!text.includes(s), `${s} appeared in the log`);
  });
});
