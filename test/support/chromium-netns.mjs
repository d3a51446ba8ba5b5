#!/usr/bin/env node
// Runs the browser tests' Chromium in a network namespace of its own that holds only loopback.
//
// Why: Chromium watches the host's interfaces (netlink) and, when an address or link changes, fails
// the requests it has in flight with net::ERR_NETWORK_CHANGED. The suites running beside a browser
// suite change the host's interfaces all the time (Docker's veths, the sandbox's namespaces, dummy
// interfaces), so a page's script or style failed now and then. In a namespace of its own Chromium sees
// no change. Its one way out is a SOCKS5 proxy on 127.0.0.1:PORT inside the namespace (Chromium's
// --proxy-server), which this process forwards to a Unix socket (Unix sockets are not bound to a
// network namespace) where the test process answers (test/support/loopback-socks.ts).
//
// Playwright starts this file as the browser: it passes Chromium's arguments and talks to it over
// fds 3 and 4 (--remote-debugging-pipe), which both steps hand down unchanged.
//   step 1 (outside): unshare --net -- node this-file ARGS
//   step 2 (inside):  ip link set lo up; listen on 127.0.0.1:PORT; run Chromium with ARGS
// Environment: BERTH_NETNS_CHROMIUM (Chromium's path), BERTH_NETNS_SOCKET (the Unix socket),
// BERTH_NETNS_PORT (the proxy's port inside the namespace).
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const env = process.env;
const stdio = [0, 1, 2, 3, 4];

if (env.BERTH_NETNS_INSIDE !== '1') {
  const inner = [process.execPath, fileURLToPath(import.meta.url), ...args];
  follow(spawn('unshare', ['--net', '--', ...inner], { stdio, env: { ...env, BERTH_NETNS_INSIDE: '1' } }));
} else {
  const up = spawnSync('ip', ['link', 'set', 'lo', 'up'], { stdio: 'inherit' });
  if (up.status !== 0) process.exit(1);
  const forward = net.createServer((client) => {
    const out = net.connect(env.BERTH_NETNS_SOCKET);
    client.pipe(out);
    out.pipe(client);
    client.on('error', () => out.destroy());
    out.on('error', () => client.destroy());
    client.on('close', () => out.destroy());
    out.on('close', () => client.destroy());
  });
  forward.listen(Number(env.BERTH_NETNS_PORT), '127.0.0.1', () => {
    follow(spawn(env.BERTH_NETNS_CHROMIUM, args, { stdio }));
  });
}

/** Passes signals on to the child and leaves with its exit. */
function follow(child) {
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', () => process.exit(1));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
