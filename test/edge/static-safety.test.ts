/**
 * What the edge never does for a static site (contract section 17; site and edge from
 * test/support/static-site.ts): serve a symlink or FIFO leading outside, skip the route rules, take an
 * upgrade, or lose track of a file being sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { useStaticSite } from '../support/static-site.js';

const st = useStaticSite();

test('a symlink in the build output to a file or folder outside is neither copied nor served', async () => {
  const { SECRET, request } = st;
  for (const p of ['/secret-link.txt', '/linkdir/x.txt', '/linkdir/', '/pipe.txt']) {
    for (const host of ['plain.test', 'spa.test']) {
      const r = await request(host, p);
      assert.ok(r.status === 404 || (host === 'spa.test' && p === '/linkdir/'), `${host}${p}: ${r.status}`);
      assert.ok(!r.body.toString().includes(SECRET), p);
    }
  }
});

test('route rules apply to a static site: a deny rule answers 403, logged', async () => {
  const { request } = st;
  const r = await request('plain.test', '/private/report.txt');
  assert.equal(r.status, 403);
  assert.match(r.body.toString(), /Forbidden/);
  assert.equal(r.entry.status, 403);
  assert.equal(r.entry.path, '/private/report.txt');
  assert.equal((await request('spa.test', '/private/report')).status, 200, 'another project without the rule: SPA index');
});

test('an upgrade request to a static site answers a 400 page and closes', async () => {
  const { site, edge, port, countRequest, entryOf } = st;
  const n = countRequest('plain');
  const sock = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write('GET /socket HTTP/1.1\r\nHost: plain.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  let text = '';
  sock.on('data', (d) => (text += d));
  await new Promise<void>((r) => sock.once('close', () => r()));
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.match(text, /content-type: text\/html/i);
  assert.match(text, /static site/);
  const entry = await entryOf('plain', n);
  assert.equal(entry.status, 400);
  assert.equal(entry.path, '/socket');
  assert.equal(edge.openConnections('plain'), 0);
});

test('a file being sent counts as an open request; a client that goes away ends it, logged with the bytes sent', async () => {
  const { BIG, edge, port, countRequest, entryOf } = st;
  const n = countRequest('plain');
  await new Promise<void>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/big.bin', headers: { host: 'plain.test' }, agent: false }, (res) => {
      assert.equal(res.headers['content-length'], String(BIG));
      res.once('data', () => {
        res.pause();
        setTimeout(() => {
          try {
            assert.equal(edge.openConnections('plain'), 1, 'open while the body is sent');
            req.destroy();
            resolve();
          } catch (e) {
            reject(e);
          }
        }, 30);
      });
    });
    req.on('error', () => {});
  });
  const entry = await entryOf('plain', n);
  assert.equal(entry.status, 200);
  assert.ok(entry.bytes > 0 && entry.bytes < BIG, `bytes sent: ${entry.bytes}`);
  for (let i = 0; i < 100 && edge.openConnections('plain') > 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(edge.openConnections('plain'), 0);
});
