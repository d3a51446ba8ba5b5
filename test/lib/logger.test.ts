import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger, redactUrl } from '../../src/lib/logger.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { randomBytes } from 'node:crypto';
import { adminCreateUser } from '../../src/modules/auth/auth.service.js';
import { tempDir, usingPostgres, freshPostgresDatabase } from '../support/harness.js';

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
    const dir = tempDir();
    const pg = usingPostgres() ? await freshPostgresDatabase() : undefined;
    const config = loadConfig({ host: '127.0.0.1', port: 0 }, { BERTH_DATA_DIR: dir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), ...(pg ? { DATABASE_URL: pg.url } : {}) } as NodeJS.ProcessEnv);
    config.logLevel = 'trace';
    const app = await buildApp(config, { logger: createLogger('trace', out.stream) });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const port = (app.server.address() as { port: number }).port;
      const u = await adminCreateUser(app.berth.ctx, { email: 'log@example.test', password: 'pw-SECRET-pw' });
      await fetch(`http://127.0.0.1:${port}/api/auth/me?token=QUERYSECRET`, { headers: { authorization: `Bearer ${u.token}` } });
      await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'log@example.test', password: 'pw-SECRET-pw' }) });
      await fetch(`http://127.0.0.1:${port}/api/auth/me`, { headers: { authorization: 'Bearer berth_pat_BADTOKEN' } });
    } finally {
      await app.close();
      await pg?.drop();
    }
    const text = out.text();
    assert.ok(text.length > 0);
    for (const s of ['berth_pat_', 'pw-SECRET-pw', 'QUERYSECRET', 'berth_ses_']) assert.ok(!text.includes(s), `${s} appeared in the log`);
  });
});
