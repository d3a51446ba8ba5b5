/**
 * The edge's TLS listener (contract section 14): a deployed tiny app answers over TLS with SNI
 * (HTTP/1.1 and HTTP/2 through ALPN, WebSocket upgrades over HTTP/1.1), with certificates from a fake
 * certificates port holding a throwaway CA's leaf; ACME HTTP-01 on plain HTTP for any host; per
 * project httpsRedirect (308) and hsts.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import type { CertificatesPort } from '../../src/modules/certificates/index.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import { assertError, edgeRequest, type HttpClient } from '../support/http.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { makeCertificate } from '../support/certificates.js';

let root: string;
let server: TestServer;
let api: HttpClient;
let projectId: string;
let host: string;
let ca: string;
let pair: { cert: string; key: string };

/** The fake certificates port: names it holds a certificate for, and pending HTTP-01 tokens. */
const certs = new Map<string, { cert: string; key: string }>();
const challenges = new Map<string, string>();
const watchers = new Set<() => void>();
const fake: CertificatesPort = {
  async forServerName(name) {
    return certs.get(name) ?? null;
  },
  async http01(token) {
    return challenges.get(token) ?? null;
  },
  async requested() {},
  // As the server's own port: a certificate issued, renewed or removed here is announced.
  invalidate() {
    for (const fn of watchers) fn();
  },
  onInvalidate(fn) {
    watchers.add(fn);
    return () => watchers.delete(fn);
  },
};

const edgePort = () => getRuntime(server.ctx).edgePort();
const tlsPort = () => getRuntime(server.ctx).httpsPort()!;

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
  protocol: string | null;
  peerNames: string;
}

/** An HTTP/1.1 request over TLS to the edge, trusting only the test CA, with SNI `servername`. */
function httpsGet(servername: string, pathName = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: tlsPort(), path: pathName, servername, ca, headers: { host: servername }, agent: false, timeout: 15000 }, (res) => {
      const socket = res.socket as tls.TLSSocket;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), headers: res.headers, protocol: socket.getProtocol?.() ?? null, peerNames: socket.getPeerCertificate?.().subjectaltname ?? '' }),
      );
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

/** An HTTP/2 request over TLS (ALPN h2) to the edge. */
function h2Get(servername: string, pathName = '/', body?: string): Promise<Answer & { alpn: string | false }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${tlsPort()}`, { ca, servername });
    session.on('error', reject);
    const req = session.request({ ':path': pathName, ':authority': servername, ...(body !== undefined ? { ':method': 'POST', 'content-length': String(Buffer.byteLength(body)) } : {}) });
    let headers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (headers = h));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('end', () => {
      const socket = session.socket as tls.TLSSocket;
      const alpn = session.alpnProtocol ?? false;
      resolve({ status: Number(headers[':status']), text: Buffer.concat(chunks).toString(), headers, protocol: socket.getProtocol?.() ?? null, peerNames: '', alpn });
      session.close();
    });
    req.end(body);
  });
}

async function patchConfig(body: object): Promise<void> {
  const r = await api.patch(`/api/projects/${projectId}`, body);
  assert.equal(r.status, 200, r.text);
}

before(async () => {
  root = tempDir('berth-https-');
  const appDir = path.join(root, 'local', 'tiny');
  writeTinyApp(appDir, { version: 'v1' });
  server = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_HTTPS_PORT: '0' }, ports: { certificates: fake } });
  await getRuntime(server.ctx).restored;
  const owner = await createUser(server);
  api = server.api(owner.token);
  const created = await api.post('/api/projects', { name: 'Secure App', startCommand: 'npm start' });
  assert.equal(created.status, 201, created.text);
  projectId = created.body.data.id;
  host = `${created.body.data.slug}.localhost`;
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', projectId).execute();
  const made = makeCertificate(root, [host]);
  ca = made.ca;
  pair = { cert: made.cert, key: made.key };
  certs.set(host, pair);
  const d = await api.post('/api/deployments', { projectId });
  assert.equal(d.status, 202, d.text);
  const done = await waitForDeployment(api, d.body.data.id, 60000);
  assert.equal(done.status, 'ready', done.error);
});

after(async () => {
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

test('the TLS listener serves the deployed app with the certificate of the SNI name (TLS 1.2 or later)', async () => {
  assert.match(getRuntime(server.ctx).httpsUrl ?? '', /^https:\/\/127\.0\.0\.1:\d+$/);
  const r = await httpsGet(host);
  assert.equal(r.status, 200);
  assert.match(r.text, /^hello v1/);
  assert.equal(r.peerNames, `DNS:${host}`);
  assert.ok(r.protocol === 'TLSv1.2' || r.protocol === 'TLSv1.3', String(r.protocol));
});

test('HTTP/2 through ALPN answers the same app, with no connection-specific headers', async () => {
  const r = await h2Get(host);
  assert.equal(r.alpn, 'h2');
  assert.equal(r.status, 200);
  assert.match(r.text, /^hello v1/);
  for (const h of ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']) assert.equal(r.headers[h], undefined, h);
  // The app sees the :authority as Host, and that the request came over TLS.
  const seen = JSON.parse((await h2Get(host, '/headers')).text);
  assert.equal(seen.host, host);
  assert.equal(seen['x-forwarded-proto'], 'https');
  assert.equal(seen['x-forwarded-host'], host);
  // A request body streams through to the app and back.
  const big = 'x'.repeat(200_000);
  const echo = await h2Get(host, '/echo', big);
  assert.equal(echo.status, 200);
  assert.equal(echo.text, big);
  assert.equal(echo.headers['x-got'], '200000');
});

test('a TLS server name without a certificate (or no SNI at all) fails the handshake', async () => {
  const handshake = (opts: tls.ConnectionOptions) =>
    new Promise<string>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: tlsPort(), ca, ...opts }, () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (e) => resolve(`error: ${e.message}`));
    });
  assert.match(await handshake({ servername: 'nobody.localhost' }), /^error/);
  assert.match(await handshake({ rejectUnauthorized: false }), /^error/);
  // The listener is still fine for a known name.
  assert.equal((await httpsGet(host)).status, 200);
});

test('a certificate renewed or removed on this server is what the next handshake sees', async () => {
  const fingerprint = () =>
    new Promise<string>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: tlsPort(), servername: host, rejectUnauthorized: false }, () => {
        const f = s.getPeerCertificate().fingerprint256;
        s.destroy();
        resolve(f);
      });
      s.on('error', (e) => resolve(`error: ${e.message}`));
    });
  // The edge's worker thread handles messages in order: once a flush is answered, the change before it was seen.
  const announce = async () => {
    fake.invalidate!(host);
    await getRuntime(server.ctx).edgeRecorded();
  };
  const first = await fingerprint();
  assert.doesNotMatch(first, /^error/);
  const dir = path.join(root, 'renewed');
  mkdirSync(dir, { recursive: true });
  const renewed = makeCertificate(dir, [host]);
  try {
    certs.set(host, { cert: renewed.cert, key: renewed.key });
    await announce();
    const second = await fingerprint();
    assert.doesNotMatch(second, /^error/);
    assert.notEqual(second, first);
    certs.delete(host);
    await announce();
    assert.match(await fingerprint(), /^error/);
  } finally {
    certs.set(host, pair);
    await announce();
  }
  assert.equal(await fingerprint(), first);
});

test('a WebSocket upgrade over HTTP/1.1 TLS reaches the app and echoes', async () => {
  const sock = tls.connect({ host: '127.0.0.1', port: tlsPort(), servername: host, ca, ALPNProtocols: ['http/1.1'] });
  await new Promise<void>((resolve, reject) => {
    sock.once('secureConnect', () => resolve());
    sock.once('error', reject);
  });
  let got = '';
  sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
  sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  await waitFor(() => got.includes('\r\n\r\n'), 'the 101 answer');
  assert.match(got, /^HTTP\/1\.1 101/);
  got = '';
  sock.write('ping over tls');
  await waitFor(() => got === 'ping over tls', 'the echo');
  sock.destroy();
});

test('requests over TLS carry X-Forwarded-Proto https to the app; plain HTTP ones http', async () => {
  await patchConfig({ httpsRedirect: false });
  const overTls = JSON.parse((await httpsGet(host, '/headers')).text);
  assert.equal(overTls['x-forwarded-proto'], 'https');
  assert.equal(overTls.host, host);
  const plain = await waitFor(async () => {
    const r = await edgeRequest(edgePort(), host, '/headers');
    return r.status === 200 ? JSON.parse(r.text) : null;
  }, 'plain HTTP to answer without a redirect');
  assert.equal(plain['x-forwarded-proto'], 'http');
});

test('plain HTTP answers ACME HTTP-01 challenges for any host, before route rules and redirects', async () => {
  challenges.set('tok_ABC-123', 'tok_ABC-123.thumbprint');
  for (const h of ['unknown.example.com', host]) {
    const r = await edgeRequest(edgePort(), h, '/.well-known/acme-challenge/tok_ABC-123');
    assert.equal(r.status, 200, h);
    assert.equal(r.text, 'tok_ABC-123.thumbprint');
    assert.match(String(r.headers['content-type']), /^text\/plain/);
  }
  assert.equal((await edgeRequest(edgePort(), 'unknown.example.com', '/.well-known/acme-challenge/nope')).status, 404);
  assert.equal((await edgeRequest(edgePort(), 'unknown.example.com', '/.well-known/acme-challenge/bad%2Ftoken')).status, 404);
  // A deny-all rule on the project does not hide the challenge.
  const rule = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'ban', ips: ['127.0.0.0/8', '::1'] });
  assert.equal(rule.status, 201, rule.text);
  await waitFor(async () => (await edgeRequest(edgePort(), host, '/')).status === 403, 'the deny rule');
  assert.equal((await edgeRequest(edgePort(), host, '/.well-known/acme-challenge/tok_ABC-123')).status, 200);
  assert.equal((await api.delete(`/api/projects/${projectId}/route-rules/${rule.body.data.id}`)).status, 200);
  await waitFor(async () => (await edgeRequest(edgePort(), host, '/')).status === 200, 'the rule gone');
});

test('httpsRedirect: by default plain HTTP answers 308 to https:// once the host has a certificate, never for challenges', async () => {
  await patchConfig({ httpsRedirect: null });
  const got = await api.get(`/api/projects/${projectId}`);
  assert.equal(got.body.data.config.httpsRedirect, null);
  const r = await waitFor(async () => {
    const a = await edgeRequest(edgePort(), host, '/some/path?x=1');
    return a.status === 308 ? a : null;
  }, 'the redirect');
  assert.equal(r.headers.location, `https://${host}:${tlsPort()}/some/path?x=1`);
  assert.equal((await edgeRequest(edgePort(), host, '/.well-known/acme-challenge/tok_ABC-123')).status, 200);
  // The redirect's target answers.
  assert.equal((await httpsGet(host, '/some/path?x=1')).status, 200);
  // Explicitly off: plain HTTP serves the app.
  await patchConfig({ httpsRedirect: false });
  assert.equal((await api.get(`/api/projects/${projectId}`)).body.data.config.httpsRedirect, false);
  await waitFor(async () => (await edgeRequest(edgePort(), host, '/')).status === 200, 'no redirect');
});

test('plain HTTP keeps working when the host has no certificate (default redirect stays off); httpsRedirect true redirects anyway', async () => {
  certs.delete(host);
  try {
    await patchConfig({ httpsRedirect: null });
    const r = await waitFor(async () => {
      const a = await edgeRequest(edgePort(), host, '/');
      return a.status === 200 ? a : null;
    }, 'plain HTTP without a certificate');
    assert.match(r.text, /^hello v1/);
    await patchConfig({ httpsRedirect: true });
    await waitFor(async () => (await edgeRequest(edgePort(), host, '/')).status === 308, 'the forced redirect');
  } finally {
    certs.set(host, pair);
    await patchConfig({ httpsRedirect: false });
  }
});

test('hsts adds Strict-Transport-Security (one year) over TLS, HTTP/1.1 and HTTP/2, never on plain HTTP', async () => {
  assert.equal((await httpsGet(host)).headers['strict-transport-security'], undefined, 'off by default');
  await patchConfig({ hsts: true, httpsRedirect: false });
  assert.equal((await api.get(`/api/projects/${projectId}`)).body.data.config.hsts, true);
  await waitFor(async () => (await httpsGet(host)).headers['strict-transport-security'] === 'max-age=31536000', 'the HSTS header');
  assert.equal((await h2Get(host)).headers['strict-transport-security'], 'max-age=31536000');
  assert.equal((await edgeRequest(edgePort(), host, '/')).headers['strict-transport-security'], undefined);
  await patchConfig({ hsts: false });
});

test('httpsRedirect and hsts must be booleans (or null)', async () => {
  assertError(await api.patch(`/api/projects/${projectId}`, { httpsRedirect: 'yes' }), 400, 'VALIDATION_FAILED', 'httpsRedirect');
  assertError(await api.patch(`/api/projects/${projectId}`, { hsts: 1 }), 400, 'VALIDATION_FAILED', 'hsts');
});
