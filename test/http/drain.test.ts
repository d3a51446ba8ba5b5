import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineRoute } from '../../src/http/route.js';
import { startTestServer } from '../support/harness.js';

describe('graceful shutdown', () => {
  it('closing the server lets an in-flight request finish before the process stops', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const server = await startTestServer({
      build: {
        modules: [
          {
            name: 'test-slow',
            routes: [
              defineRoute({
                method: 'GET',
                url: '/api/test/slow',
                summary: 'waits until released',
                access: 'public',
                async handler() {
                  entered();
                  await gate;
                  return { finished: true };
                },
              }),
            ],
          },
        ],
      },
    });
    const inflight = server.api().get('/api/test/slow');
    await inside;
    const closing = server.close();
    await new Promise((r) => setTimeout(r, 100));
    release();
    const res = await inflight;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { finished: true });
    await closing;
  });
});
