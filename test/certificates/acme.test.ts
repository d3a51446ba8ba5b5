/**
 * Certificates from a real ACME server (contract section 14): Debian's Pebble validating HTTP-01
 * against a DNS stub that resolves the test domains to 127.0.0.1. In most tests the HTTP-01 answers
 * come from a tiny HTTP server here that asks `ctx.ports.certificates.http01(token)` (so a test can
 * answer wrongly, and the scheduler's pass is driven by the test, not by a running scheduler); the
 * last test goes through the edge itself (HTTP-01 on its plain port, the certificate served over TLS).
 * Berth trusts Pebble's HTTPS through BERTH_ACME_CA_FILE.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import http from 'node:http';
import { test, type TestContext } from 'node:test';
import tls from 'node:tls';
import { randomString } from '../../src/lib/ids.js';
import { renewDueCertificates } from '../../src/modules/certificates/index.js';
import { testClock } from '../support/clock.js';
import { startDnsStub } from '../support/dns-stub.js';
import { createProject, createUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { freePort, freePorts, startPebble } from '../support/pebble.js';
import { waitFor } from '../support/wait.js';
import { edgeRequest } from '../support/http.js';

const TIMEOUT = 90_000;

/** Pebble, the DNS stub, the HTTP-01 responder and a Berth server with HTTPS on, trusting Pebble. */
async function setup(t: TestContext) {
  const dns = await startDnsStub();
  t.after(() => dns.close());

  let server: TestServer | undefined;
  /** Hosts whose challenges are answered with a wrong key authorization. */
  const wrongFor = new Set<string>();
  const seen: string[] = [];
  const responder = http.createServer((req, res) => {
    const prefix = '/.well-known/acme-challenge/';
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    seen.push(`${host} ${req.url}`);
    void (async () => {
      const token = req.url?.startsWith(prefix) ? req.url.slice(prefix.length) : '';
      const answer = token && server ? await server.ctx.ports.certificates!.http01(token) : null;
      if (!answer) return res.writeHead(404, { 'content-type': 'text/plain' }).end('no such challenge');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(wrongFor.has(host) ? `${token}.not-the-account-thumbprint` : answer);
    })().catch(() => res.writeHead(500).end());
  });
  const httpPort = await freePort();
  await new Promise<void>((resolve) => responder.listen(httpPort, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => responder.close(() => resolve())));

  const pebble = await startPebble({ dnsServer: dns.server, httpPort });
  t.after(() => pebble.stop());
  const caFile = pebble.caFile;

  const clock = testClock();
  server = await startTestServer({
    clock,
    env: {
      BERTH_HTTPS_PORT: '0',
      BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl,
      BERTH_ACME_CA_FILE: caFile,
      BERTH_ACME_EMAIL: 'ops@berth-acme.test',
      BERTH_APPS_DOMAIN: 'apps.berth-acme.test',
    },
  });
  t.after(() => server!.close());
  const owner = await createUser(server);
  const project = await createProject(server, owner);
  const s = server;
  const name = (label: string) => {
    const domain = `${label}-${randomString(6).toLowerCase()}.berth-acme.test`;
    dns.a.set(domain, ['127.0.0.1']);
    return domain;
  };
  const addDomain = async (domain: string) => {
    const r = await s.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain });
    assert.equal(r.status, 201, r.text);
    return r.body.data;
  };
  const domainAnswer = async (domain: string) => {
    const r = await s.api(owner.token).get(`/api/projects/${project.id}/domains`);
    assert.equal(r.status, 200, r.text);
    return r.body.data.find((d: { domain: string }) => d.domain === domain);
  };
  const row = (domain: string) => s.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', domain).executeTakeFirst();
  return { server: s, clock, pebble, owner, project, wrongFor, seen, name, addDomain, domainAnswer, row };
}

/** The chain's certificates, checked to lead from the leaf up to Pebble's root. */
function verifyChain(chainPem: string, rootPem: string, domain: string): X509Certificate[] {
  const certs = chainPem.split(/(?<=-----END CERTIFICATE-----)\s*/).filter((p) => p.includes('BEGIN CERTIFICATE')).map((p) => new X509Certificate(p));
  assert.ok(certs.length >= 2, 'leaf and intermediate');
  assert.equal(certs[0]!.checkHost(domain), domain);
  for (let i = 0; i + 1 < certs.length; i++) assert.ok(certs[i]!.verify(certs[i + 1]!.publicKey), `certificate ${i} is signed by the next`);
  assert.ok(certs[certs.length - 1]!.verify(new X509Certificate(rootPem).publicKey), 'the chain ends at Pebble\'s root');
  return certs;
}

test('a verified domain gets a certificate from the ACME server: issued, its chain verifies, its key is sealed in the database, forServerName serves it', { timeout: TIMEOUT }, async (t) => {
  const { server, pebble, seen, name, addDomain, domainAnswer, row } = await setup(t);
  const domain = name('shop');

  const added = await addDomain(domain);
  assert.equal(added.verified, true);
  assert.deepEqual(added.tls, { status: 'pending' }, 'requested as soon as it is verified');
  await server.ctx.jobs.drain();

  const stored = await row(domain);
  assert.ok(stored, 'a certificate row');
  assert.equal(stored.status, 'issued', `issued (error: ${stored.error})`);
  assert.equal(stored.error, null);
  assert.equal(stored.attempts, 0);
  assert.equal(stored.nextAttemptAt, null);
  assert.ok(seen.some((s) => s.startsWith(`${domain} /.well-known/acme-challenge/`)), `Pebble fetched the challenge from the domain: ${seen.join(', ')}`);
  assert.equal(await server.ctx.db.selectFrom('acmeChallenges').select('token').where('domain', '=', domain).executeTakeFirst(), undefined, 'the challenge row is gone');

  const certs = verifyChain(stored.certPem!, await pebble.rootCertPem(), domain);
  assert.equal(stored.expiresAt, new Date(certs[0]!.validTo).toISOString());
  assert.match(stored.issuer!, /Pebble/);

  // The private key is sealed: no PEM in the row, nothing of it in the raw table either.
  assert.doesNotMatch(stored.keySealed!, /PRIVATE KEY/);
  assert.match(stored.keySealed!, /^v1\./);
  const raw = await server.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', domain).execute();
  assert.doesNotMatch(JSON.stringify(raw), /PRIVATE KEY/);
  const account = await server.ctx.db.selectFrom('acmeAccounts').selectAll().execute();
  assert.equal(account.length, 1, 'one ACME account for the directory');
  assert.doesNotMatch(account[0]!.keySealed, /PRIVATE KEY/);
  assert.equal(account[0]!.email, 'ops@berth-acme.test');

  // What the edge reads: the chain and the unsealed key that matches the leaf.
  const pair = await server.ctx.ports.certificates!.forServerName(domain.toUpperCase() + '.');
  assert.ok(pair, 'forServerName answers the domain');
  assert.equal(pair.cert, stored.certPem);
  assert.ok(certs[0]!.checkPrivateKey(createPrivateKey(pair.key)));
  assert.equal(await server.ctx.ports.certificates!.forServerName(`other-${domain}`), null, 'a name without a certificate has none');

  // The domain answer shows it.
  const answer = await domainAnswer(domain);
  assert.deepEqual(answer.tls, { status: 'issued', expiresAt: stored.expiresAt, issuer: stored.issuer });

  // A second domain reuses the ACME account.
  const second = name('blog');
  await addDomain(second);
  await server.ctx.jobs.drain();
  assert.equal((await row(second))?.status, 'issued');
  assert.equal((await server.ctx.db.selectFrom('acmeAccounts').selectAll().execute()).length, 1);
});

test('renewal: a certificate past its renewal time is replaced by the scheduler\'s pass with a new one', { timeout: TIMEOUT }, async (t) => {
  const { server, clock, pebble, name, addDomain, row } = await setup(t);
  const domain = name('renew');
  await addDomain(domain);
  await server.ctx.jobs.drain();
  const first = await row(domain);
  assert.equal(first?.status, 'issued', String(first?.error));
  const firstSerial = new X509Certificate(first.certPem!).serialNumber;
  assert.ok(await server.ctx.ports.certificates!.forServerName(domain));

  // Nothing due: the pass enqueues nothing.
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);

  clock.advancePast(first.renewAt!);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [domain]);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [], 'queued once');
  await server.ctx.jobs.drain();

  const renewed = await row(domain);
  assert.equal(renewed?.status, 'issued', String(renewed?.error));
  const leaf = verifyChain(renewed.certPem!, await pebble.rootCertPem(), domain)[0]!;
  assert.notEqual(leaf.serialNumber, firstSerial, 'a new certificate');
  assert.ok(renewed.expiresAt! >= first.expiresAt!);
  assert.ok(renewed.renewAt! > new Date().toISOString(), 'the new certificate has a renewal time ahead (of the CA\'s time: only the server\'s clock was moved)');
  // This server's cache was invalidated: it serves the new one at once.
  const pair = await server.ctx.ports.certificates!.forServerName(domain);
  assert.equal(pair?.cert, renewed.certPem);
  assert.ok(leaf.checkPrivateKey(createPrivateKey(pair!.key)));
});

test('a failing challenge reports failed with the ACME server\'s reason and a next attempt with backoff; a removed domain loses its certificate', { timeout: TIMEOUT }, async (t) => {
  const { server, clock, wrongFor, name, addDomain, domainAnswer, row, project, owner } = await setup(t);
  const domain = name('broken');
  wrongFor.add(domain);
  const before = clock.now();
  await addDomain(domain);
  await server.ctx.jobs.drain();

  const failed = await row(domain);
  assert.equal(failed?.status, 'failed');
  assert.match(failed.error!, new RegExp(`^the certificate for ${domain.replace(/\./g, '\\.')} could not be issued: the HTTP-01 challenge`));
  assert.match(failed.error!, /key authorization|keyAuthorization|does not match/i, failed.error!);
  assert.doesNotMatch(failed.error!, /PRIVATE KEY|v1\./);
  assert.equal(failed.attempts, 1);
  const next = Date.parse(failed.nextAttemptAt!);
  assert.ok(next >= before + 55_000 && next <= clock.now() + 65_000, `about a minute later: ${failed.nextAttemptAt}`);
  assert.equal(failed.certPem, null);
  assert.equal(await server.ctx.ports.certificates!.forServerName(domain), null);
  assert.deepEqual(await domainAnswer(domain).then((d) => d.tls), { status: 'failed', error: failed.error });

  // Not due yet: the pass leaves it; once due, it is retried (and fails again, backing off further).
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);
  clock.advancePast(failed.nextAttemptAt!);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [domain]);
  await server.ctx.jobs.drain();
  const again = await row(domain);
  assert.equal(again?.attempts, 2);
  assert.ok(Date.parse(again.nextAttemptAt!) >= clock.now() + 100_000, `two minutes later: ${again.nextAttemptAt}`);

  // Answered rightly, the next attempt issues it.
  wrongFor.delete(domain);
  clock.advancePast(again.nextAttemptAt!);
  await renewDueCertificates(server.ctx);
  await server.ctx.jobs.drain();
  const issued = await row(domain);
  assert.equal(issued?.status, 'issued', String(issued?.error));
  assert.equal(issued.error, null);
  assert.equal(issued.attempts, 0);

  // Removing the domain removes its certificate; the edge no longer gets it.
  const r = await server.api(owner.token).delete(`/api/projects/${project.id}/domains/${domain}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(await row(domain), undefined);
  assert.equal(await server.ctx.ports.certificates!.forServerName(domain), null);
});

test('without an HTTPS port no certificate is requested and domains answer tls none', { timeout: TIMEOUT }, async (t) => {
  const server = await startTestServer({ env: { BERTH_APPS_DOMAIN: 'apps.berth-acme.test' } });
  t.after(() => server.close());
  const owner = await createUser(server);
  const project = await createProject(server, owner);
  const domain = `plain-${randomString(6).toLowerCase()}.berth-acme.test`;
  const r = await server.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.data.tls, { status: 'none' });
  assert.equal(await server.ctx.db.selectFrom('jobs').select('id').where('kind', '=', 'certificates.issue').executeTakeFirst(), undefined);
  assert.deepEqual(await renewDueCertificates(server.ctx), { enqueued: [], removed: [] });
  assert.equal(await server.ctx.db.selectFrom('certificates').select('id').executeTakeFirst(), undefined);
});

test('end to end: the edge answers Pebble\'s HTTP-01 on its plain HTTP port and then serves the issued certificate over TLS', { timeout: TIMEOUT }, async (t) => {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  const [edgePort, httpsPort] = await freePorts(2);
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: edgePort });
  t.after(() => pebble.stop());
  const caFile = pebble.caFile;
  const server = await startTestServer({
    background: true,
    env: {
      BERTH_EDGE_PORT: String(edgePort),
      BERTH_HTTPS_PORT: String(httpsPort),
      BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl,
      BERTH_ACME_CA_FILE: caFile,
      BERTH_APPS_DOMAIN: 'apps.berth-acme.test',
    },
  });
  t.after(() => server.close());
  const owner = await createUser(server);
  const project = await createProject(server, owner);
  const domain = `edge-${randomString(6).toLowerCase()}.berth-acme.test`;
  dns.a.set(domain, ['127.0.0.1']);
  const r = await server.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain });
  assert.equal(r.status, 201, r.text);

  const row = () => server.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', domain).executeTakeFirst();
  await waitFor(async () => ['issued', 'failed'].includes((await row())?.status ?? ''), 'the certificate to be issued by the worker', 30_000);
  const stored = (await row())!;
  assert.equal(stored.status, 'issued', String(stored.error));

  const rootPem = await pebble.rootCertPem();
  const peer = await waitFor(
    () =>
      new Promise<tls.PeerCertificate | false>((resolve) => {
        const socket = tls.connect({ host: '127.0.0.1', port: httpsPort, servername: domain, ca: rootPem, timeout: 5000 }, () => {
          const cert = socket.authorized ? socket.getPeerCertificate() : false;
          socket.end();
          resolve(cert);
        });
        socket.on('error', () => resolve(false));
        socket.on('timeout', () => socket.destroy());
      }),
    'the edge to serve the certificate over TLS (trusted through Pebble\'s root)',
    10_000,
  );
  assert.equal(peer.serialNumber.toLowerCase(), new X509Certificate(stored.certPem!).serialNumber.toLowerCase());

  // A domain whose challenge fails (Pebble reaches nothing at 127.0.0.2) reports failed, and plain HTTP
  // keeps serving it as it served before: no redirect, the same answer as the project's free domain.
  const broken = `broken-${randomString(6).toLowerCase()}.berth-acme.test`;
  dns.a.set(broken, ['127.0.0.2']);
  const b = await server.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain: broken });
  assert.equal(b.status, 201, b.text);
  const failedRow = () => server.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', broken).executeTakeFirst();
  await waitFor(async () => ((await failedRow())?.status === 'failed' ? true : null), 'the broken domain\'s certificate to fail', 30_000);
  assert.match((await failedRow())!.error!, /could not be issued/);
  const plainBroken = await edgeRequest(edgePort, broken, '/');
  const plainFree = await edgeRequest(edgePort, `${project.slug}.apps.berth-acme.test`, '/');
  assert.notEqual(plainBroken.status, 308);
  assert.equal(plainBroken.status, plainFree.status);
  // The certified domain itself is redirected to HTTPS on plain HTTP (httpsRedirect's default once issued).
  const plainIssued = await edgeRequest(edgePort, domain, '/x?y=1');
  assert.equal(plainIssued.status, 308);
  assert.equal(plainIssued.headers.location, `https://${domain}:${httpsPort}/x?y=1`);
});
