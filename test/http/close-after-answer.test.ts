import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { closeAfterAnswer } from '../../src/http/close-after-answer.js';
import { waitFor } from '../support/wait.js';

/**
 * An early answer to a request whose body is still arriving closes the connection once written,
 * also when the handler's reader destroyed the request stream (an async iterator thrown into by
 * `pipeline`, as the upload and transfer routes read): such a request no longer names its socket,
 * and a connection left open kept the server's close waiting for its 72 s keep-alive.
 */
describe('closeAfterAnswer', () => {
  let app: FastifyInstance;
  let port: number;
  const LIMIT = 4 * 1024 * 1024;

  before(async () => {
    app = Fastify();
    app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
    app.post('/limited', async (req, reply) => {
      try {
        let seen = 0;
        const limit = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            seen += chunk.length;
            cb(seen > LIMIT ? Object.assign(new Error('too large'), { statusCode: 413 }) : null, chunk);
          },
        });
        const sink = new Writable({ write: (_c, _e, cb) => cb() });
        try {
          await pipeline(Readable.from(req.raw.iterator({ destroyOnReturn: false })), limit, sink);
        } finally {
          // Cleanup work (a temp file removed): by its end the reader has destroyed the request stream.
          await new Promise((r) => setTimeout(r, 50));
        }
        return { ok: true };
      } catch (e) {
        closeAfterAnswer(req, reply);
        throw e;
      }
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  const open = () => new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));

  it('closes the connection after a 413 whose reader destroyed the request stream, while the client keeps sending', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/limited', headers: { 'content-type': 'application/octet-stream' }, agent: new http.Agent({ keepAlive: true }) });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (e) => reject(e));
      const chunk = Buffer.alloc(256 * 1024, 1);
      let sent = 0;
      // Twice the limit: the client is still sending when the answer comes.
      const pump = () => {
        while (sent < 2 * LIMIT) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    }).catch(() => 0);
    assert.ok(status === 413 || status === 0, `the client saw the 413 or the cut (got ${status})`);
    await waitFor(async () => ((await open()) === 0 ? true : null), 'the server to close the connection', 5_000);
  });
});
