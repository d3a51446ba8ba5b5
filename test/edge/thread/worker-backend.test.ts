/**
 * The threaded edge's cache of app addresses (src/edge/thread/worker-backend.ts), with the main
 * thread's side played by a function that answers as BerthRuntime would: what the worker asks the
 * main thread, and how often.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EdgeUpstream } from '../../../src/edge/backend.js';
import { ENTRY_WIDTH, type AskKind, type FromWorker, type WireUpstream } from '../../../src/edge/thread/protocol.js';
import { LANES_FRESH_MS, WorkerBackend } from '../../../src/edge/thread/worker-backend.js';

function withAnswers(answer: (app: string) => WireUpstream) {
  const asked: string[] = [];
  const cache = new WorkerBackend(async (kind: AskKind, arg: string) => {
    asked.push(`${kind}:${arg}`);
    return answer(arg);
  }, () => {});
  const upstream = async (app: string): Promise<EdgeUpstream> => cache.backend().upstream(app);
  return { cache, asked, upstream };
}

const address = (port: number) => ({ host: '127.0.0.1', port, key: `127.0.0.1:${port}` });

describe("the edge thread's app addresses", () => {
  it('an app with one address is asked once, and again only after its state changed', async () => {
    const { cache, asked, upstream } = withAnswers(() => ({ ...address(4100), lanes: null }));
    for (let i = 0; i < 5; i++) assert.equal((await upstream('app-1')).key, '127.0.0.1:4100');
    assert.deepEqual(asked, ['upstream:app-1']);
    cache.appChanged('app-1');
    await upstream('app-1');
    assert.deepEqual(asked, ['upstream:app-1', 'upstream:app-1']);
  });

  it("a Swarm service's lanes are rotated over per request without asking the main thread each time", async () => {
    const { asked, upstream } = withAnswers(() => ({ ...address(4200), lanes: [address(4201), address(4202), address(4203)] }));
    const picked: string[] = [];
    for (let i = 0; i < 6; i++) {
      const up = await upstream('svc');
      assert.equal(up.key, '127.0.0.1:4200', "the service's balancer port (health, WebSocket upgrades)");
      picked.push(up.pick!()!.key);
    }
    assert.deepEqual(asked, ['upstream:svc'], 'asked once for six requests');
    assert.deepEqual(picked, ['4201', '4202', '4203', '4201', '4202', '4203'].map((p) => `127.0.0.1:${p}`));
  });

  it("a Swarm service's lanes are asked for again after a while, so a task that came gets requests", async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    let lanes = [address(4301)];
    const { asked, upstream } = withAnswers(() => ({ ...address(4300), lanes }));
    assert.equal((await upstream('svc')).pick!()!.key, '127.0.0.1:4301');
    lanes = [address(4301), address(4302)];
    t.mock.timers.tick(LANES_FRESH_MS - 1);
    await upstream('svc');
    assert.equal(asked.length, 1, 'still fresh');
    t.mock.timers.tick(2);
    const up = await upstream('svc');
    assert.equal(asked.length, 2);
    assert.deepEqual([up.pick!()!.key, up.pick!()!.key], ['127.0.0.1:4301', '127.0.0.1:4302']);
  });

  it('a service with no lane listening yet is served on its balancer port, and asked again soon', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 2_000_000 });
    const { asked, upstream } = withAnswers(() => ({ ...address(4400), lanes: [] }));
    const up = await upstream('svc');
    assert.equal(up.pick, undefined, 'no pick: the address itself');
    assert.equal(up.key, '127.0.0.1:4400');
    t.mock.timers.tick(LANES_FRESH_MS + 1);
    await upstream('svc');
    assert.equal(asked.length, 2);
  });
});

describe("the edge thread's batches to the main thread", () => {
  function posting() {
    const posted: FromWorker[] = [];
    const cache = new WorkerBackend(async () => null, (m) => posted.push(m));
    return { cache, posted };
  }
  const entry = { ts: '2026-12-01T00:00:00.000Z', method: 'GET', path: '/', status: 200, durationMs: 1, ip: '127.0.0.1', bytes: 5 };

  it('an app whose open requests come and go is named by its state at the batch, not by a message per change', () => {
    const { cache, posted } = posting();
    cache.openChanged('busy-app', true);
    cache.openChanged('quick-app', true);
    cache.record('quick-app', entry);
    cache.openChanged('quick-app', false);
    assert.equal(posted.length, 0, 'nothing is sent before the batch');
    cache.flush();
    assert.equal(posted.length, 1);
    const batch = posted[0] as Extract<FromWorker, { t: 'batch' }>;
    assert.deepEqual({ opened: batch.opened, idle: batch.idle }, { opened: ['busy-app'], idle: ['quick-app'] });
    assert.equal(batch.entries.length, ENTRY_WIDTH);

    // A state already sent is not sent again; a change with no request served still makes a batch.
    cache.flush();
    assert.equal(posted.length, 1);
    cache.openChanged('busy-app', false);
    cache.flush();
    const next = posted[1] as Extract<FromWorker, { t: 'batch' }>;
    assert.deepEqual({ opened: next.opened, idle: next.idle, entries: next.entries }, { opened: [], idle: ['busy-app'], entries: [] });
  });
});
