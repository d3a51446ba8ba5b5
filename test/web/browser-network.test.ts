import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSuite, launchBrowser } from '../support/browser.js';
import { loopbackHost, startLoopbackSocks, type LoopbackSocks } from '../support/loopback-socks.js';
import { waitFor } from '../support/wait.js';

const asRoot = process.getuid?.() === 0;

describe('the browser tests\' Chromium', browserSuite('the browser tests\' Chromium'), () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  test('loads a page whose requests wait while the host adds an interface (no ERR_NETWORK_CHANGED)', { skip: !asRoot && 'needs root to add an interface' }, async () => {
    // Chromium learns of an interface change a few seconds after it (its notifier waits for quiet),
    // then fails the requests still waiting for a connection (six per host are open at once). The
    // page's ten scripts are held until well after that.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let asked = 0;
    const server = http.createServer((req, res) => {
      if (req.url === '/') {
        const scripts = Array.from({ length: 10 }, (_, i) => `<script src="/s${i}.js"></script>`).join('');
        return void res.end(`<html><body>${scripts}</body></html>`);
      }
      asked++;
      void held.then(() => res.end('window.loaded = (window.loaded || 0) + 1;'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const name = `bnt${randomBytes(3).toString('hex')}`;
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const loading = page.goto(`http://127.0.0.1:${port}/`);
      await waitFor(() => asked >= 6, 'the page to ask for its scripts');
      const ip = (...args: string[]) => assert.equal(spawnSync('ip', args).status, 0, `ip ${args.join(' ')}`);
      ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `${name}p`);
      ip('link', 'set', name, 'up');
      ip('link', 'set', `${name}p`, 'up');
      await new Promise((r) => setTimeout(r, 5000));
      release();
      await loading;
      assert.deepEqual(failed, []);
      assert.equal(await page.evaluate(() => (window as unknown as { loaded?: number }).loaded), 10);
    } finally {
      release();
      spawnSync('ip', ['link', 'del', name]);
      await page.close();
      server.close();
    }
  });
});

describe('the loopback SOCKS proxy', () => {
  let dir: string;
  let socks: LoopbackSocks;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-socks-'));
    socks = await startLoopbackSocks(path.join(dir, 's'));
  });
  after(async () => {
    await socks.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Greets, sends command `cmd` (1 CONNECT) for `addr`, and returns the reply's code and the socket (open on success). */
  async function ask(addr: Buffer, cmd = 1): Promise<{ code: number; socket: net.Socket }> {
    const socket = net.connect(path.join(dir, 's'));
    socket.write(Buffer.from([5, 1, 0]));
    socket.write(Buffer.concat([Buffer.from([5, cmd, 0]), addr]));
    const got: Buffer[] = [];
    await waitFor(() => {
      const b = socket.read() as Buffer | null;
      if (b) got.push(b);
      return Buffer.concat(got).length >= 12;
    }, 'the SOCKS replies');
    const all = Buffer.concat(got);
    assert.deepEqual([...all.subarray(0, 2)], [5, 0], 'no authentication chosen');
    return { code: all[3]!, socket };
  }
  const port = (n: number) => Buffer.from([n >> 8, n & 0xff]);

  test('connects to a loopback address and pipes both ways', async () => {
    const echo = net.createServer((c) => c.pipe(c));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const { code, socket } = await ask(Buffer.concat([Buffer.from([1, 127, 0, 0, 1]), port((echo.address() as net.AddressInfo).port)]));
    assert.equal(code, 0);
    socket.write('ping');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    await waitFor(() => text === 'ping', 'the echo');
    socket.destroy();
    echo.close();
  });

  test('refuses any address off this machine (code 2) and commands other than CONNECT (code 7)', async () => {
    const off = await ask(Buffer.concat([Buffer.from([1, 10, 0, 0, 1]), port(80)]));
    assert.equal(off.code, 2);
    const name = Buffer.from('example.com');
    const named = await ask(Buffer.concat([Buffer.from([3, name.length]), name, port(80)]));
    assert.equal(named.code, 2);
    off.socket.destroy();
    named.socket.destroy();
    const bind = await ask(Buffer.concat([Buffer.from([1, 127, 0, 0, 1]), port(80)]), 2);
    assert.equal(bind.code, 7);
    bind.socket.destroy();
  });

  test('loopback names: localhost and *.localhost, 127/8 and ::1 only', () => {
    assert.equal(loopbackHost('localhost'), '127.0.0.1');
    assert.equal(loopbackHost('app.localhost.'), '127.0.0.1');
    assert.equal(loopbackHost('127.3.2.1'), '127.3.2.1');
    assert.equal(loopbackHost('::1'), '::1');
    for (const h of ['localhost.example.com', '10.0.0.1', '0.0.0.0', '::', 'example.com']) assert.equal(loopbackHost(h), null, h);
  });
});
