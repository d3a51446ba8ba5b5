/** Kept logs on disk: segments, retention, and the search over them (no server: the files themselves). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LogStore } from '../../src/runtime/logs.js';
import type { RequestEntry } from '../../src/edge/requests.js';
import { sweepLogs } from '../../src/runtime/log-retention.js';
import { searchLogs, type SearchOptions } from '../../src/runtime/log-search.js';

const T0 = Date.parse('2026-03-01T23:59:00.000Z');
const at = (i: number) => new Date(T0 + i * 1000).toISOString();

function withStore(fn: (store: LogStore, root: string) => Promise<void>) {
  return async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-kept-'));
    const store = new LogStore(root, { runtimeBytes: 4000, buildBytes: 4000 });
    try {
      await fn(store, root);
    } finally {
      store.closeAll();
      rmSync(root, { recursive: true, force: true });
    }
  };
}

/** A search as the service makes it: the gathered request lines written first (runtime/logs.ts bufferMs). */
const opts = (store: LogStore, o: Partial<SearchOptions>): SearchOptions => {
  store.flushAll();
  return { dir: store.dirOf('p1'), buildDir: path.join(store.dirOf('p1'), 'builds'), sources: ['runtime'], fds: null, q: '', limit: 50, ...o };
};

test('a kept runtime log moves to a segment past its size and at a new day, and keeps every line', withStore(async (store) => {
  const f = store.runtime('p1');
  for (let i = 0; i < 300; i++) f.append({ ts: at(i), stream: i % 7 ? 'stdout' : 'stderr', line: i % 10 === 3 ? `ERROR number ${i}` : `line ${i}` });
  f.close();
  const names = readdirSync(store.dirOf('p1'));
  assert.ok(names.filter((n) => n.startsWith('runtime.log.')).length > 3, names.join(' '));
  const all: string[] = [];
  let cursor;
  for (let pages = 0; pages < 100; pages++) {
    const page = await searchLogs(opts(store, { limit: 40, ...(cursor ? { cursor } : {}) }));
    all.unshift(...page.lines.map((l) => l.line));
    if (!page.next) break;
    cursor = page.next;
  }
  assert.equal(all.length, 300);
  assert.equal(all[0], 'line 0');
  assert.equal(all[299], 'line 299');
}));

test('a search matches text, time range and stdout/stderr, newest last', withStore(async (store) => {
  const f = store.runtime('p1');
  for (let i = 0; i < 300; i++) f.append({ ts: at(i), stream: i % 2 ? 'stdout' : 'stderr', line: i % 10 === 3 ? `ERROR "quoted" ${i}` : `line ${i}` });
  const errors = await searchLogs(opts(store, { q: 'ERROR "quoted"' }));
  assert.equal(errors.lines.length, 30);
  assert.equal(errors.lines.at(-1)!.line, 'ERROR "quoted" 293');
  assert.equal(errors.next, null);
  const ranged = await searchLogs(opts(store, { q: 'ERROR', since: at(100), until: at(200) }));
  assert.deepEqual(ranged.lines.map((l) => l.line.split(' ').at(-1)), ['103', '113', '123', '133', '143', '153', '163', '173', '183', '193']);
  const stderr = await searchLogs(opts(store, { fds: ['stderr'], limit: 5 }));
  assert.ok(stderr.lines.every((l) => l.stream === 'stderr'));
  assert.equal(stderr.lines.length, 5);
  assert.ok(stderr.next);
}));

test('runtime, build and request lines come merged in time order, each with its source', withStore(async (store) => {
  store.runtime('p1').append({ ts: at(1), stream: 'stdout', line: 'app says hi' });
  store.build('p1', 'dep1').append({ ts: at(2), stream: 'stdout', line: 'build says hi' });
  store.requests<RequestEntry>('p1').append({ ts: at(3), method: 'GET', path: '/hi', status: 200, durationMs: 3, ip: '127.0.0.1', bytes: 5 });
  store.runtime('p1').append({ ts: at(4), stream: 'stderr', line: 'app says bye' });
  const page = await searchLogs(opts(store, { sources: ['runtime', 'build', 'request'] }));
  assert.deepEqual(page.lines.map((l) => [l.source, l.line]), [
    ['runtime', 'app says hi'],
    ['build', 'build says hi'],
    ['request', 'GET /hi 200 3ms 5B 127.0.0.1'],
    ['runtime', 'app says bye'],
  ]);
  assert.equal(page.lines[1]!.deploymentId, 'dep1');
  const paged = await searchLogs(opts(store, { sources: ['runtime', 'build', 'request'], limit: 2 }));
  assert.deepEqual(paged.lines.map((l) => l.line), ['GET /hi 200 3ms 5B 127.0.0.1', 'app says bye']);
  const rest = await searchLogs(opts(store, { sources: ['runtime', 'build', 'request'], limit: 2, cursor: paged.next! }));
  assert.deepEqual(rest.lines.map((l) => l.line), ['app says hi', 'build says hi']);
}));

test('retention removes files older than the retention time, then the oldest past the size cap', withStore(async (store) => {
  const f = store.runtime('p1');
  for (let i = 0; i < 300; i++) f.append({ ts: at(i), stream: 'stdout', line: `line ${i}` });
  store.build('p1', 'old').append({ ts: at(0), stream: 'stdout', line: 'old build' });
  const dir = store.dirOf('p1');
  const eightDaysAgo = (Date.now() - 8 * 86_400_000) / 1000;
  utimesSync(path.join(dir, 'builds', 'old.log'), eightDaysAgo, eightDaysAgo);
  const segments = () => readdirSync(dir).filter((n) => n.startsWith('runtime.log.'));
  const before = segments().length;
  sweepLogs(store, { maxAgeMs: 7 * 86_400_000, maxBytes: 1024 * 1024 });
  assert.deepEqual(readdirSync(path.join(dir, 'builds')), []);
  assert.equal(segments().length, before);
  sweepLogs(store, { maxAgeMs: 7 * 86_400_000, maxBytes: 9000 });
  assert.ok(segments().length < before);
  // The newest lines are what is left, and the log goes on being written.
  f.append({ ts: at(400), stream: 'stdout', line: 'after the sweep' });
  const page = await searchLogs(opts(store, { limit: 1 }));
  assert.equal(page.lines[0]!.line, 'after the sweep');
}));

test("the edge's request lines are gathered and written in one go: after the window, or at once when read", withStore(async (store) => {
  const f = store.requests<RequestEntry>('p1');
  const file = path.join(store.dirOf('p1'), 'requests.log');
  for (let i = 0; i < 3; i++) f.append({ ts: at(i), method: 'GET', path: `/r${i}`, status: 200, durationMs: 1, ip: '127.0.0.1', bytes: 1 });
  assert.equal(existsSync(file) ? readFileSync(file, 'utf8') : '', '', 'nothing written on the request path');
  assert.equal(f.read().length, 3, 'a read writes what is gathered first');
  assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 3);
  f.append({ ts: at(4), method: 'GET', path: '/later', status: 200, durationMs: 1, ip: '127.0.0.1', bytes: 1 });
  const end = Date.now() + 5000;
  while (!readFileSync(file, 'utf8').includes('/later')) {
    assert.ok(Date.now() < end, 'the gathered line is written within its window');
    await new Promise((r) => setTimeout(r, 20));
  }
}));
