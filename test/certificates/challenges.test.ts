/**
 * The other two ACME challenges (contract section 14, issue 20 points 2 and 4), against Debian's Pebble:
 *
 * - TLS-ALPN-01 (RFC 8737) on the edge's real TLS listener: Pebble's `tlsPort` is the edge's HTTPS port,
 *   and its HTTP-01 port answers nothing. Berth tries HTTP-01 first (Pebble always offers it); its
 *   failure makes the same attempt order again with TLS-ALPN-01.
 * - DNS-01 for the free domains' wildcard `*.<BERTH_APPS_DOMAIN>`: with BERTH_DNS_PROVIDER=cloudflare the
 *   leader's pass (the scheduler's first pass after start) issues it through a fake of Cloudflare's API,
 *   whose TXT records are mirrored into the DNS stub Pebble resolves with; the edge then serves a
 *   project's free domain over TLS with it.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import tls from 'node:tls';
import { createLogger } from '../../src/lib/logger.js';
import { randomString } from '../../src/lib/ids.js';
import { issueCertificate, renewDueCertificates } from '../../src/modules/certificates/index.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { testClock } from '../support/clock.js';
import { startDnsStub } from '../support/dns-stub.js';
import { createProject, createUser } from '../support/factories.js';
import { startFakeCloudflare } from '../support/fake-cloudflare.js';
import { startTestServer, tempDir } from '../support/harness.js';
import { freePort, freePorts, startPebble } from '../support/pebble.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { writeTinyApp } from '../runtime/app-fixture.js';

const TIMEOUT = 120_000;

interface Handshake {
  ok: boolean;
  authorized?: boolean;
  alpn?: string | false | null;
  cert?: tls.DetailedPeerCertificate;
  error?: string;
  /** The server closed the connection after the handshake without being asked to. */
  closedByServer?: boolean;
}

/** A TLS handshake with the edge: SNI `servername`, the ALPN protocols offered, trusting `ca` (or nothing). */
function handshake(port: number, servername: string, opts: { ALPNProtocols?: string[]; ca?: string } = {}): Promise<Handshake> {
  return new Promise((resolve) => {
    let done: Handshake | null = null;
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ALPNProtocols: opts.ALPNProtocols, ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }), timeout: 5000 }, () => {
      done = { ok: true, authorized: socket.authorized, alpn: socket.alpnProtocol, cert: socket.getPeerCertificate(true) };
    });
    socket.on('data', () => {});
    socket.on('end', () => {
      if (done) done.closedByServer = true;
      socket.end();
    });
    socket.on('close', () => resolve(done ?? { ok: false, error: 'closed' }));
    socket.on('error', (e) => {
      if (!done) done = { ok: false, error: e.message };
    });
    socket.on('timeout', () => socket.destroy());
    // A normal connection stays open: close it from here once the handshake is done.
    setTimeout(() => socket.destroy(), 1500).unref();
  });
}

test('HTTP-01 unreachable: the worker\'s attempt falls back to TLS-ALPN-01 on the edge\'s HTTPS port (acme-tls/1 answered with the challenge certificate from the database), the certificate is issued and served', { timeout: TIMEOUT }, async (t) => {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  const [httpsPort, deadHttpPort] = await freePorts(2);
  // HTTP-01 goes to a port nobody answers on: only TLS-ALPN-01, on the edge's HTTPS port, can succeed.
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: deadHttpPort, tlsPort: httpsPort });
  t.after(() => pebble.stop());
  let logged = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logged += chunk.toString();
      cb();
    },
  });
  const server = await startTestServer({
    background: true,
    build: { logger: createLogger('info', sink) },
    env: {
      BERTH_HTTPS_PORT: String(httpsPort),
      BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl,
      BERTH_ACME_CA_FILE: pebble.caFile,
      BERTH_APPS_DOMAIN: 'apps.berth-acme.test',
    },
  });
  t.after(() => server.close());
  assert.equal(getRuntime(server.ctx).httpsPort(), httpsPort);
  const owner = await createUser(server);
  const project = await createProject(server, owner);
  const domain = `alpn-${randomString(6).toLowerCase()}.berth-acme.test`;
  dns.a.set(domain, ['127.0.0.1']);

  // Nothing pending yet: an acme-tls/1 handshake for the name fails.
  const early = await handshake(httpsPort, domain, { ALPNProtocols: ['acme-tls/1'] });
  assert.equal(early.ok, false, 'no challenge certificate without a pending challenge');

  const r = await server.api(owner.token).post(`/api/projects/${project.id}/domains`, { domain });
  assert.equal(r.status, 201, r.text);
  const row = () => server.ctx.db.selectFrom('certificates').selectAll().where('domain', '=', domain).executeTakeFirst();
  await waitFor(async () => ['issued', 'failed'].includes((await row())?.status ?? ''), 'the worker\'s attempt to end', 40_000);
  const stored = (await row())!;
  assert.equal(stored.status, 'issued', String(stored.error));
  assert.equal(stored.error, null);
  assert.equal(stored.attempts, 0, 'one attempt: the fallback is inside it');
  assert.equal(await server.ctx.db.selectFrom('acmeChallenges').select('token').where('domain', '=', domain).executeTakeFirst(), undefined, 'the challenge rows are gone');

  // HTTP-01 was tried first and failed; the same attempt then validated through TLS-ALPN-01.
  const lines = logged.split('\n').filter((l) => l.includes(domain)).map((l) => JSON.parse(l) as { msg: string; failed?: string; next?: string; challenge?: string; reason?: string });
  const fallback = lines.find((l) => l.msg.startsWith('ACME challenge failed'));
  assert.ok(fallback, `the fallback is logged: ${lines.map((l) => l.msg).join(' | ')}`);
  assert.equal(fallback.failed, 'http-01');
  assert.equal(fallback.next, 'tls-alpn-01');
  assert.match(fallback.reason!, /the HTTP-01 challenge/);
  assert.equal(lines.find((l) => l.msg === 'certificate issued')?.challenge, 'tls-alpn-01');

  // The issued certificate is now what the listener serves for the name, trusted through Pebble's root.
  const rootPem = await pebble.rootCertPem();
  const served = await waitFor(async () => {
    const h = await handshake(httpsPort, domain, { ALPNProtocols: ['h2', 'http/1.1'], ca: rootPem });
    return h.ok && h.authorized ? h : false;
  }, 'the edge to serve the issued certificate', 40_000);
  assert.equal(served.alpn, 'h2');
  assert.equal(served.cert!.serialNumber.toLowerCase(), new X509Certificate(stored.certPem!).serialNumber.toLowerCase());
  // And acme-tls/1 for it, with no challenge pending any more, fails again (the real certificate is never the answer).
  assert.equal((await handshake(httpsPort, domain, { ALPNProtocols: ['acme-tls/1'] })).ok, false);

  // The test-only choice still orders with TLS-ALPN-01 alone.
  const outcome = await issueCertificate(server.ctx, domain, { challenge: 'tls-alpn-01' });
  assert.equal(outcome.status, 'issued', JSON.stringify(outcome));
});

test('TLS-ALPN-01 on the listener: a pending challenge\'s certificate is answered to acme-tls/1 only, acme-tls/1 is selected and the connection closed; other handshakes are unchanged', { timeout: TIMEOUT }, async (t) => {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  const [httpsPort, deadHttpPort] = await freePorts(2);
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: deadHttpPort, tlsPort: httpsPort });
  t.after(() => pebble.stop());
  const clock = testClock();
  const server = await startTestServer({
    background: true,
    clock,
    env: { BERTH_HTTPS_PORT: String(httpsPort), BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl, BERTH_ACME_CA_FILE: pebble.caFile },
  });
  t.after(() => server.close());

  // A challenge row as an order on any instance leaves it: the certificate public, its key sealed.
  const acme = await import('acme-client');
  const domain = `pending-${randomString(6).toLowerCase()}.berth-acme.test`;
  const keyAuthorization = `token-${randomString(8)}.thumbprint`;
  const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  const [, cert] = await acme.crypto.createAlpnCertificate({ identifier: { type: 'dns', value: domain } } as never, keyAuthorization, keyPem);
  const { encryptSecret } = await import('../../src/lib/crypto.js');
  const token = `tok${randomString(12)}`;
  await server.ctx.db
    .insertInto('acmeChallenges')
    .values({
      token,
      keyAuthorization,
      domain,
      kind: 'tls-alpn-01',
      certPem: cert.toString(),
      keySealed: encryptSecret(server.ctx.keyring, keyPem, `acme-challenge:${token}`),
      recordName: null,
      recordId: null,
      expiresAt: new Date(clock.now() + 600_000).toISOString(),
    })
    .execute();
  const raw = await server.ctx.db.selectFrom('acmeChallenges').selectAll().where('token', '=', token).executeTakeFirstOrThrow();
  assert.doesNotMatch(JSON.stringify(raw), /PRIVATE KEY/);

  const h = await handshake(httpsPort, domain.toUpperCase(), { ALPNProtocols: ['acme-tls/1'] });
  assert.equal(h.ok, true, h.error);
  assert.equal(h.alpn, 'acme-tls/1');
  assert.equal(h.closedByServer, true, 'the server closes a validation connection');
  assert.equal(h.cert!.subjectaltname, `DNS:${domain}`);
  assert.ok(acme.crypto.isAlpnCertificateAuthorizationValid(`-----BEGIN CERTIFICATE-----\n${h.cert!.raw.toString('base64')}\n-----END CERTIFICATE-----\n`, keyAuthorization));

  // The same name without acme-tls/1 gets no challenge certificate (and has no real one): the handshake fails.
  assert.equal((await handshake(httpsPort, domain, { ALPNProtocols: ['h2', 'http/1.1'] })).ok, false);
  assert.equal((await handshake(httpsPort, domain)).ok, false);
  // Another name with acme-tls/1 and nothing pending fails.
  assert.equal((await handshake(httpsPort, `other-${domain}`, { ALPNProtocols: ['acme-tls/1'] })).ok, false);
  // HTTP-01 never answers a TLS-ALPN-01 token (this one still pending).
  assert.equal(await server.ctx.ports.certificates!.http01(token), null);
  // An expired challenge is not answered.
  clock.advancePast(raw.expiresAt);
  assert.equal((await handshake(httpsPort, domain, { ALPNProtocols: ['acme-tls/1'] })).ok, false);
});

test('DNS-01: with a DNS provider the leader\'s pass issues the free domains\' wildcard through Cloudflare, removes the TXT record, and the edge serves <slug>.<apps domain> with it; the API token is never logged', { timeout: TIMEOUT }, async (t) => {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  const cf = await startFakeCloudflare({ zones: ['apps.test'], txt: dns.txt });
  t.after(() => cf.close());
  const [edgePort, httpsPort] = await freePorts(2);
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: edgePort, tlsPort: httpsPort });
  t.after(() => pebble.stop());
  const root = tempDir('berth-wildcard-');
  const appDir = path.join(root, 'local', 'tiny');
  writeTinyApp(appDir, { version: 'v1' });

  let logged = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logged += chunk.toString();
      cb();
    },
  });
  const server = await startTestServer({
    background: true,
    logLevel: 'debug',
    build: { logger: createLogger('debug', sink) },
    env: {
      BERTH_EDGE_PORT: String(edgePort),
      BERTH_HTTPS_PORT: String(httpsPort),
      BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl,
      BERTH_ACME_CA_FILE: pebble.caFile,
      BERTH_APPS_DOMAIN: 'apps.test',
      BERTH_DNS_PROVIDER: 'cloudflare',
      BERTH_CLOUDFLARE_API_TOKEN: cf.token,
      BERTH_CLOUDFLARE_API_URL: cf.baseUrl,
      BERTH_LOCAL_ROOTS: path.join(root, 'local'),
    },
  });
  t.after(() => server.close());

  // The scheduler's first pass (soon after start) keeps *.apps.test: the worker orders it with DNS-01 (10 s for the record to propagate).
  const row = () => server.ctx.db.selectFrom('instanceCertificates').selectAll().where('domain', '=', '*.apps.test').executeTakeFirst();
  await waitFor(async () => ['issued', 'failed'].includes((await row())?.status ?? ''), 'the wildcard certificate to be issued by the leader\'s pass', 60_000);
  const stored = (await row())!;
  assert.equal(stored.status, 'issued', String(stored.error));
  assert.match(stored.issuer!, /Pebble/);
  assert.match(stored.keySealed!, /^v1\./);
  const leaf = new X509Certificate(stored.certPem!);
  assert.equal(leaf.checkHost('web.apps.test'), '*.apps.test');
  assert.equal(leaf.checkHost('a.b.apps.test'), undefined);

  // The TXT record went through the fake Cloudflare and is removed again; no challenge row is left.
  assert.ok(cf.requests.some((q) => q === 'POST /client/v4/zones/' + cf.zones.get('apps.test') + '/dns_records'), cf.requests.join('\n'));
  assert.ok(cf.requests.some((q) => q.startsWith('DELETE /client/v4/zones/')), cf.requests.join('\n'));
  assert.deepEqual(cf.txtValues('_acme-challenge.apps.test'), []);
  assert.equal(dns.txt.has('_acme-challenge.apps.test'), false);
  assert.ok(dns.queries.includes('TXT _acme-challenge.apps.test'), 'Pebble looked the record up');
  assert.equal(await server.ctx.db.selectFrom('acmeChallenges').select('token').executeTakeFirst(), undefined);
  // The wildcard belongs to no org: nothing in the projects' certificates.
  assert.equal(await server.ctx.db.selectFrom('certificates').select('id').executeTakeFirst(), undefined);

  // Not due again: the next pass enqueues nothing.
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, []);

  // A deployed project's free domain answers over TLS with the wildcard, trusted through Pebble's root only.
  await getRuntime(server.ctx).restored;
  const owner = await createUser(server);
  const project = await createProject(server, owner, { startCommand: 'npm start' });
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', project.id).execute();
  const d = await server.api(owner.token).post('/api/deployments', { projectId: project.id });
  assert.equal(d.status, 202, d.text);
  const done = await waitForDeployment(server.api(owner.token), d.body.data.id, 60_000);
  assert.equal(done.status, 'ready', done.error);
  const host = `${project.slug}.apps.test`;
  const rootPem = await pebble.rootCertPem();
  const answer = await new Promise<{ status: number; text: string; authorized: boolean; serial: string }>((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: httpsPort, path: '/', servername: host, ca: rootPem, headers: { host }, agent: false, timeout: 10_000 }, (res) => {
      const socket = res.socket as tls.TLSSocket;
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, authorized: socket.authorized, serial: socket.getPeerCertificate().serialNumber }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
  assert.equal(answer.authorized, true);
  assert.equal(answer.serial.toLowerCase(), leaf.serialNumber.toLowerCase());
  assert.equal(answer.status, 200);
  assert.match(answer.text, /^hello v1/);

  // The token is in no log line (and logging was on at debug).
  assert.ok(logged.length > 0);
  assert.ok(!logged.includes(cf.token), 'the Cloudflare API token never appears in a log line');
});

test('DNS-01: a provider that refuses the token fails the wildcard with Berth\'s reason (no token in it) and backs off', { timeout: TIMEOUT }, async (t) => {
  const dns = await startDnsStub();
  t.after(() => dns.close());
  const cf = await startFakeCloudflare({ zones: ['apps.test'], txt: dns.txt });
  t.after(() => cf.close());
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: await freePort() });
  t.after(() => pebble.stop());
  const wrongToken = `cf-wrong-${randomString(16)}`;
  const server = await startTestServer({
    env: {
      BERTH_HTTPS_PORT: '0',
      BERTH_ACME_DIRECTORY_URL: pebble.directoryUrl,
      BERTH_ACME_CA_FILE: pebble.caFile,
      BERTH_APPS_DOMAIN: 'apps.test',
      BERTH_DNS_PROVIDER: 'cloudflare',
      BERTH_CLOUDFLARE_API_TOKEN: wrongToken,
      BERTH_CLOUDFLARE_API_URL: cf.baseUrl,
    },
  });
  t.after(() => server.close());
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, ['*.apps.test']);
  assert.deepEqual((await renewDueCertificates(server.ctx)).enqueued, [], 'queued once');
  await server.ctx.jobs.drain();
  const row = await server.ctx.db.selectFrom('instanceCertificates').selectAll().where('domain', '=', '*.apps.test').executeTakeFirstOrThrow();
  assert.equal(row.status, 'failed');
  assert.match(row.error!, /^the certificate for \*\.apps\.test could not be issued: Cloudflare refused the API token/);
  assert.ok(!row.error!.includes(wrongToken));
  assert.equal(row.attempts, 1);
  assert.ok(Date.parse(row.nextAttemptAt!) > Date.now() + 50_000);
  assert.equal(cf.records.length, 0);
  assert.equal(await server.ctx.ports.certificates!.forServerName('web.apps.test'), null);
});

test('DNS-01: the wildcard files, when given, are served instead and no wildcard is ordered', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir('berth-wildcard-files-');
  const acme = await import('acme-client');
  const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  writeFileSync(path.join(dir, 'key.pem'), key);
  writeFileSync(path.join(dir, 'cert.pem'), '-----BEGIN CERTIFICATE-----\nnot read here\n-----END CERTIFICATE-----\n');
  const server = await startTestServer({
    env: {
      BERTH_HTTPS_PORT: '0',
      BERTH_APPS_DOMAIN: 'apps.test',
      BERTH_DNS_PROVIDER: 'cloudflare',
      BERTH_CLOUDFLARE_API_TOKEN: 'cf-unused',
      BERTH_CLOUDFLARE_API_URL: 'http://127.0.0.1:9',
      BERTH_WILDCARD_CERT_FILE: path.join(dir, 'cert.pem'),
      BERTH_WILDCARD_KEY_FILE: path.join(dir, 'key.pem'),
    },
  });
  t.after(() => server.close());
  assert.deepEqual(await renewDueCertificates(server.ctx), { enqueued: [], removed: [] });
  assert.equal(await server.ctx.db.selectFrom('instanceCertificates').select('domain').executeTakeFirst(), undefined);
  assert.equal((await server.ctx.ports.certificates!.forServerName('web.apps.test'))?.key, key);
});

test('DNS-01: a record an order left behind (a crash) is removed through the provider by the next pass, by the id its challenge row kept', { timeout: TIMEOUT }, async (t) => {
  const cf = await startFakeCloudflare({ zones: ['apps.test'] });
  t.after(() => cf.close());
  const clock = testClock();
  const server = await startTestServer({
    clock,
    env: { BERTH_APPS_DOMAIN: 'apps.test', BERTH_DNS_PROVIDER: 'cloudflare', BERTH_CLOUDFLARE_API_TOKEN: cf.token, BERTH_CLOUDFLARE_API_URL: cf.baseUrl },
  });
  t.after(() => server.close());
  const { CloudflareDnsProvider } = await import('../../src/edge/acme/cloudflare.js');
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });
  const record = await provider.createTxt('apps.test', '_acme-challenge.apps.test', 'left-behind');
  const row = (expiresAt: string) => ({
    token: `tok${randomString(12)}`,
    keyAuthorization: 'left-behind',
    domain: 'apps.test',
    kind: 'dns-01',
    certPem: null,
    keySealed: null,
    recordName: '_acme-challenge.apps.test',
    recordId: record.id,
    expiresAt,
  });
  const pending = row(new Date(clock.now() + 600_000).toISOString());
  await server.ctx.db.insertInto('acmeChallenges').values(pending).execute();
  await renewDueCertificates(server.ctx);
  assert.deepEqual(cf.txtValues('_acme-challenge.apps.test'), ['left-behind'], 'a pending order\'s record is left alone');

  clock.advancePast(pending.expiresAt);
  cf.failWith = 503;
  await renewDueCertificates(server.ctx);
  assert.ok(await server.ctx.db.selectFrom('acmeChallenges').select('token').where('token', '=', pending.token).executeTakeFirst(), 'kept while the provider fails');
  cf.failWith = null;
  await renewDueCertificates(server.ctx);
  assert.deepEqual(cf.txtValues('_acme-challenge.apps.test'), []);
  assert.equal(await server.ctx.db.selectFrom('acmeChallenges').select('token').executeTakeFirst(), undefined);
});
