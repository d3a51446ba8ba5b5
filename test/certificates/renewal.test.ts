/**
 * When certificates are renewed (contract section 14 as amended, issue 32 point 8), against Debian's
 * Pebble: without ACME Renewal Information, two thirds of the certificate's lifetime; with it (RFC
 * 9773, added in front of Pebble 2.4 by `ari-front.ts`), a random time in the CA's suggested window,
 * asked again after its Retry-After, and the renewal order names the certificate it replaces. The
 * scheduler's passes are driven by the test (no background scheduler); HTTP-01 is answered by a
 * small server asking `ctx.ports.certificates.http01`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { randomString } from '../../src/lib/ids.js';
import { renewDueCertificates } from '../../src/modules/certificates/index.js';
import { ariCertificateId, pickInWindow, pollDelayMs, serialDerBytes } from '../../src/modules/certificates/ari.js';
import { testClock } from '../support/clock.js';
import { startDnsStub } from '../support/dns-stub.js';
import { createProject, createUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { freePort, startPebble } from '../support/pebble.js';
import { startAriFront, type AriWindow } from './ari-front.js';

const TIMEOUT = 90_000;
const HOUR = 3600_000;

/** Pebble (behind the ARI front when `ari` gives the window every certificate starts with), a server, and one issued certificate. */
async function setup(t: TestContext, opts: { ari: AriWindow | null }) {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  let server: TestServer | undefined;
  const responder = http.createServer((req, res) => {
    const prefix = '/.well-known/acme-challenge/';
    void (async () => {
      const token = req.url?.startsWith(prefix) ? req.url.slice(prefix.length) : '';
      const answer = token && server ? await server.ctx.ports.certificates!.http01(token) : null;
      if (!answer) return res.writeHead(404).end('no such challenge');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(answer);
    })().catch(() => res.writeHead(500).end());
  });
  const httpPort = await freePort();
  await new Promise<void>((resolve) => responder.listen(httpPort, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => responder.close(() => resolve())));
  const pebble = await startPebble({ dnsServer: dns.server, httpPort });
  t.after(() => pebble.stop());
  const front = opts.ari ? await startAriFront(pebble) : null;
  if (front) {
    front.defaultWindow = opts.ari;
    t.after(() => front.close());
  }
  const clock = testClock();
  server = await startTestServer({
    clock,
    env: {
      BERTH_HTTPS_PORT: '0',
      BERTH_ACME_DIRECTORY_URL: front ? front.directoryUrl : pebble.directoryUrl,
      BERTH_ACME_CA_FILE: pebble.caFile,
      BERTH_APPS_DOMAIN: 'apps.berth-renew.test',
    },
  });
  const s = server;
  t.after(() => s.close());
  const owner = await createUser(s);
  const project = await createProject(s, owner);
  const domain = `renew-${randomString(6).toLowerCase()}.berth-renew.test`;
  dns.a.set(domain, ['127.0.0.1']);
  const r = await s.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain });
  assert.equal(r.status, 201, r.text);
  await s.ctx.jobs.drain();
  const row = async () => s.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', domain).executeTakeFirstOrThrow();
  const issued = await row();
  assert.equal(issued.status, 'issued', String(issued.error));
  const queuedJobs = async () => (await s.ctx.db.selectFrom('jobs').select('id').where('kind', '=', 'certificates.issue').where('status', '=', 'queued').execute()).length;
  return { server: s, clock, front, domain, row, issued, queuedJobs };
}

/** Two thirds of the leaf's lifetime, from the certificate itself. */
function twoThirds(pem: string): number {
  const leaf = new X509Certificate(pem);
  const from = Date.parse(leaf.validFrom);
  return from + ((Date.parse(leaf.validTo) - from) * 2) / 3;
}

/** The ARI id of a certificate read with openssl (an implementation apart from Berth's). */
function opensslAriId(pem: string): string {
  const dir = tempDir('berth-ari-id-');
  const file = path.join(dir, 'cert.pem');
  writeFileSync(file, pem);
  const text = execFileSync('openssl', ['x509', '-in', file, '-noout', '-ext', 'authorityKeyIdentifier', '-serial'], { encoding: 'utf8' });
  const keyId = /^\s*(?:keyid:)?([0-9A-F]{2}(?::[0-9A-F]{2})+)\s*$/m.exec(text)![1]!.replace(/:/g, '');
  let serial = /^serial=([0-9A-F]+)$/m.exec(text)![1]!;
  if (serial.length % 2) serial = `0${serial}`;
  if (parseInt(serial.slice(0, 2), 16) >= 0x80) serial = `00${serial}`;
  return `${Buffer.from(keyId, 'hex').toString('base64url')}.${Buffer.from(serial, 'hex').toString('base64url')}`;
}

test('without renewal information a certificate is renewed at two thirds of its lifetime: a fresh one is not renewed by the next pass, a due one is', { timeout: TIMEOUT }, async (t) => {
  const { server, clock, domain, row, issued, queuedJobs } = await setup(t, { ari: null });
  assert.equal(Date.parse(issued.renewAt!), Math.floor(twoThirds(issued.certPem!)), 'two thirds from notBefore to notAfter');
  assert.equal(issued.renewalInfoAt, null, 'Pebble offers no renewal information: nothing to ask again');
  assert.ok(Date.parse(issued.renewAt!) > Date.now() + HOUR, `in the future: ${issued.renewAt}`);

  // The next passes leave the fresh certificate alone (it used to be replaced on every pass).
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  assert.equal(await queuedJobs(), 0);
  assert.equal((await row()).certPem, issued.certPem);

  // A certificate issued before renewal times were kept gets its time from the certificate, and is not renewed either.
  await server.ctx.db.updateTable('certificates').set({ renewAt: null }).where('domain', '=', domain).execute();
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  assert.equal((await row()).renewAt, issued.renewAt);

  // Past its renewal time, the pass renews it once.
  clock.advancePast(issued.renewAt!);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [domain]);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [], 'queued once');
  await server.ctx.jobs.drain();
  const renewed = await row();
  assert.equal(renewed.status, 'issued', String(renewed.error));
  assert.notEqual(new X509Certificate(renewed.certPem!).serialNumber, new X509Certificate(issued.certPem!).serialNumber);
  assert.equal(Date.parse(renewed.renewAt!), Math.floor(twoThirds(renewed.certPem!)));
  // The CA's clock was not moved: the new certificate is due two thirds of its lifetime after it was issued, in the CA's time.
  assert.ok(Date.parse(renewed.renewAt!) > Date.now() + HOUR, `in the future: ${renewed.renewAt}`);
});

test('with renewal information (RFC 9773) the renewal time is a random time in the suggested window, asked again after Retry-After, and the renewal order names the certificate it replaces', { timeout: TIMEOUT }, async (t) => {
  const t0 = Date.now();
  // Every certificate's window until the test moves one: two to three days ahead, asked again after two hours.
  const start = new Date(t0 + 48 * HOUR);
  const end = new Date(t0 + 72 * HOUR);
  const { server, clock, front, domain, row, issued, queuedJobs } = await setup(t, { ari: { start, end, retryAfter: 7200 } });
  const id = opensslAriId(issued.certPem!);
  assert.equal(ariCertificateId(issued.certPem!), id);
  assert.ok(front!.polls.includes(id), `asked for the new certificate's renewal information right after issuance: ${front!.polls.join(', ')}`);
  const renewAt = Date.parse(issued.renewAt!);
  assert.ok(renewAt >= start.getTime() && renewAt <= end.getTime(), `inside the window: ${issued.renewAt}`);
  const askAgain = Date.parse(issued.renewalInfoAt!);
  assert.ok(askAgain >= t0 + 7200_000 && askAgain <= clock.now() + 7200_000, `after Retry-After: ${issued.renewalInfoAt}`);
  assert.equal(front!.orders.length, 1);
  assert.equal(front!.orders[0]!.replaces, undefined, 'a first certificate replaces nothing');

  // Before Retry-After has passed, the pass neither asks nor renews.
  const polls = front!.polls.length;
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  assert.equal(front!.polls.length, polls);

  // Retry-After passed, the same window: asked again, the time picked is kept, the next ask is Retry-After later.
  clock.advancePast(issued.renewalInfoAt!);
  const before = clock.now();
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  assert.equal(front!.polls.length, polls + 1);
  assert.equal(front!.polls.at(-1), id);
  const kept = await row();
  assert.equal(kept.renewAt, issued.renewAt);
  assert.ok(Date.parse(kept.renewalInfoAt!) >= before + 7200_000);

  // The CA moves the window into the past (say, a revocation ahead): at the next ask the pass renews at once.
  clock.advancePast(kept.renewalInfoAt!);
  front!.windows.set(id, { start: new Date(clock.now() - 2 * HOUR), end: new Date(clock.now() - HOUR), retryAfter: 30 });
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [domain]);
  assert.equal(await queuedJobs(), 1);
  await server.ctx.jobs.drain();
  const renewed = await row();
  assert.equal(renewed.status, 'issued', String(renewed.error));
  assert.notEqual(renewed.certPem, issued.certPem);
  assert.equal(front!.orders.length, 2);
  assert.equal(front!.orders[1]!.replaces, id, 'the renewal order names the certificate it replaces (RFC 9773 §5)');
  const next = Date.parse(renewed.renewAt!);
  assert.ok(next >= start.getTime() && next <= end.getTime(), 'the new certificate has its own window');
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
});

test('the ARI certificate identifier is RFC 9773\'s: base64url of the authority key identifier and of the serial\'s DER octets', () => {
  // The RFC's example: keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4, serial 0x87654321.
  const dir = tempDir('berth-ari-example-');
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=example CA',
    '-addext', 'subjectKeyIdentifier=69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4', '-addext', 'basicConstraints=critical,CA:TRUE']);
  openssl(['req', ...ec, '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', '/CN=example.com']);
  writeFileSync(path.join(dir, 'ext.cnf'), 'authorityKeyIdentifier=keyid\nsubjectAltName=DNS:example.com\n');
  openssl(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-set_serial', '0x87654321', '-out', 'leaf.pem', '-days', '1', '-extfile', 'ext.cnf']);
  const pem = readFileSync(path.join(dir, 'leaf.pem'), 'utf8');
  assert.equal(ariCertificateId(pem), 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE');
  assert.equal(serialDerBytes('7F').toString('hex'), '7f');
  assert.equal(serialDerBytes('0080').toString('hex'), '0080');
  assert.equal(serialDerBytes('1').toString('hex'), '01');
});

test('a renewal time is drawn uniformly inside the window; Retry-After is kept between one minute and one day, six hours without it', () => {
  const w = { start: new Date('2030-01-01T00:00:00Z'), end: new Date('2030-01-03T00:00:00Z') };
  assert.equal(pickInWindow(w, () => 0).toISOString(), w.start.toISOString());
  assert.equal(pickInWindow(w, () => 0.5).toISOString(), '2030-01-02T00:00:00.000Z');
  const draws = Array.from({ length: 200 }, () => pickInWindow(w).getTime());
  assert.ok(draws.every((d) => d >= w.start.getTime() && d < w.end.getTime()));
  assert.ok(new Set(draws).size > 150, 'random, not one fixed time');
  assert.equal(pollDelayMs('7200'), 7200_000);
  assert.equal(pollDelayMs('5'), 60_000);
  assert.equal(pollDelayMs(String(7 * 24 * 3600)), 24 * HOUR);
  assert.equal(pollDelayMs(undefined), 6 * HOUR);
  assert.equal(pollDelayMs('soon'), 6 * HOUR);
});
