import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import * as acme from 'acme-client';
import { CloudflareDnsProvider } from '../../../src/edge/acme/cloudflare.js';
import { startDnsStub } from '../../support/dns-stub.js';
import { startFakeCloudflare } from '../../support/fake-cloudflare.js';
import { freePort, startPebble } from '../../support/pebble.js';

/** A DNS stub, a challenge responder on a free port, Pebble validating against both, and acme-client trusting it. */
async function acmeSetup(t: TestContext) {
  const dns = await startDnsStub();
  t.after(() => dns.close());

  // The challenge responder Pebble validates against: /.well-known/acme-challenge/<token>.
  const answers = new Map<string, string>();
  const seen: string[] = [];
  const responder = http.createServer((req, res) => {
    seen.push(`${req.headers.host} ${req.url}`);
    const token = req.url?.startsWith('/.well-known/acme-challenge/') ? req.url.slice('/.well-known/acme-challenge/'.length) : '';
    const answer = answers.get(token);
    res.writeHead(answer ? 200 : 404, { 'content-type': 'text/plain' }).end(answer ?? 'no such challenge');
  });
  const httpPort = await freePort();
  await new Promise<void>((resolve) => responder.listen(httpPort, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => responder.close(() => resolve())));

  const pebble = await startPebble({ dnsServer: dns.server, httpPort });
  t.after(() => pebble.stop());

  // acme-client talks through its own axios instance: trust Pebble's HTTPS CA for this test only.
  const previousAgent = acme.axios.defaults.httpsAgent;
  acme.axios.defaults.httpsAgent = new https.Agent({ ca: pebble.caCertPem });
  t.after(() => {
    acme.axios.defaults.httpsAgent = previousAgent;
  });

  const client = new acme.Client({
    directoryUrl: pebble.directoryUrl,
    accountKey: await acme.crypto.createPrivateEcdsaKey('P-256'),
    backoffAttempts: 10,
    backoffMin: 100,
    backoffMax: 1000,
  });
  return { dns, answers, seen, httpPort, pebble, client };
}

test('pebble: acme-client opens an account and completes an HTTP-01 order; the chain verifies against Pebble\'s root', { timeout: 60_000 }, async (t) => {
  const { dns, answers, seen, httpPort, pebble, client } = await acmeSetup(t);
  const name = 'app.berth-acme.test';
  dns.a.set(name, ['127.0.0.1']);

  const account = await client.createAccount({ termsOfServiceAgreed: true, contact: ['mailto:ops@berth-acme.test'] });
  assert.equal(account.status, 'valid');
  assert.match(client.getAccountUrl(), /^https:\/\/127\.0\.0\.1:\d+\//);

  const order = await client.createOrder({ identifiers: [{ type: 'dns', value: name }] });
  const [authz] = await client.getAuthorizations(order);
  assert.equal(authz.identifier.value, name);
  const challenge = authz.challenges.find((c) => c.type === 'http-01');
  assert.ok(challenge, `an http-01 challenge is offered: ${authz.challenges.map((c) => c.type).join(', ')}`);
  answers.set(challenge.token, await client.getChallengeKeyAuthorization(challenge));
  await client.completeChallenge(challenge);
  await client.waitForValidStatus(challenge);
  answers.delete(challenge.token);
  assert.ok(
    seen.includes(`${name}:${httpPort} /.well-known/acme-challenge/${challenge.token}`),
    `Pebble fetched the challenge from the name's address: ${seen.join(', ')}\n${pebble.output().slice(-2000)}`,
  );

  const [key, csr] = await acme.crypto.createCsr({ altNames: [name] }, await acme.crypto.createPrivateEcdsaKey('P-256'));
  // Finalizing answers `processing` until the certificate is issued: wait for `valid` (bounded by the backoff).
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(order, csr));
  assert.equal(finalized.status, 'valid');
  const chainPem = await client.getCertificate(finalized);

  // The chain: leaf for the name, signed up to Pebble's root (fetched from its management interface).
  const rootPem = await pebble.rootCertPem();
  const pems = acme.crypto.splitPemChain(chainPem);
  assert.ok(pems.length >= 2, 'leaf and intermediate');
  const certs = pems.map((p) => new X509Certificate(p));
  const root = new X509Certificate(rootPem);
  assert.equal(certs[0].checkHost(name), name);
  assert.ok(certs[0].checkPrivateKey(createPrivateKey(key)));
  for (let i = 0; i + 1 < certs.length; i++) assert.ok(certs[i].verify(certs[i + 1].publicKey), `certificate ${i} is signed by the next`);
  assert.ok(certs[certs.length - 1].verify(root.publicKey), 'the last of the chain is signed by the root');
  assert.ok(new Date(certs[0].validTo).getTime() > Date.now() + 24 * 3600_000);

  // And Node's TLS client accepts it for the name with only Pebble's root trusted.
  const server = tls.createServer({ key, cert: chainPem }, (socket) => socket.end('hello over tls\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const greeting = await new Promise<string>((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port, servername: name, ca: rootPem, timeout: 5000 }, () => {
      assert.equal(socket.authorized, true, String(socket.authorizationError));
    });
    let data = '';
    socket.on('data', (d) => (data += d));
    socket.on('end', () => resolve(data));
    socket.on('timeout', () => socket.destroy(new Error('no TLS answer within 5 s')));
    socket.on('error', reject);
  });
  assert.equal(greeting, 'hello over tls\n');
});

test('pebble: a challenge answered wrongly leaves the authorization invalid with Pebble\'s reason', { timeout: 60_000 }, async (t) => {
  const { dns, seen, client } = await acmeSetup(t);
  const name = 'broken.berth-acme.test';
  dns.a.set(name, ['127.0.0.1']);
  await client.createAccount({ termsOfServiceAgreed: true });

  const order = await client.createOrder({ identifiers: [{ type: 'dns', value: name }] });
  const [authz] = await client.getAuthorizations(order);
  const challenge = authz.challenges.find((c) => c.type === 'http-01')!;
  // Nothing published: the responder answers 404.
  await client.completeChallenge(challenge);
  await assert.rejects(client.waitForValidStatus(challenge), (e: Error) => {
    assert.match(e.message, /404/, `the reason names what Pebble saw: ${e.message}`);
    return true;
  });
  assert.ok(seen.some((s) => s.includes(challenge.token)));
  const [after] = await client.getAuthorizations(order);
  assert.equal(after.status, 'invalid');
});

test('pebble: a wildcard certificate through DNS-01, the TXT record published by the Cloudflare provider', { timeout: 60_000 }, async (t) => {
  const { dns, pebble, client } = await acmeSetup(t);
  const cf = await startFakeCloudflare({ zones: ['berth-acme.test'], txt: dns.txt });
  t.after(() => cf.close());
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });
  await client.createAccount({ termsOfServiceAgreed: true });

  const order = await client.createOrder({ identifiers: [{ type: 'dns', value: '*.apps.berth-acme.test' }] });
  const [authz] = await client.getAuthorizations(order);
  assert.equal(authz.identifier.value, 'apps.berth-acme.test', 'the authorization is for the base name');
  assert.equal(authz.wildcard, true);
  const challenge = authz.challenges.find((c) => c.type === 'dns-01');
  assert.ok(challenge, `a dns-01 challenge is offered: ${authz.challenges.map((c) => c.type).join(', ')}`);
  const fqdn = `_acme-challenge.${authz.identifier.value}`;
  const record = await provider.createTxt(authz.identifier.value, fqdn, await client.getChallengeKeyAuthorization(challenge));
  assert.equal(dns.txt.get(fqdn)?.length, 1, 'the published record is what the DNS answers');
  await client.completeChallenge(challenge);
  await client.waitForValidStatus(challenge);
  assert.ok(dns.queries.includes(`TXT ${fqdn}`), `Pebble looked the record up: ${dns.queries.join(', ')}`);
  await provider.removeTxt(fqdn, record.id);
  assert.equal(dns.txt.has(fqdn), false);

  const [key, csr] = await acme.crypto.createCsr({ altNames: ['*.apps.berth-acme.test'] }, await acme.crypto.createPrivateEcdsaKey('P-256'));
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(order, csr));
  const chain = acme.crypto.splitPemChain(await client.getCertificate(finalized)).map((p) => new X509Certificate(p));
  assert.equal(chain[0].checkHost('web.apps.berth-acme.test'), '*.apps.berth-acme.test', 'the wildcard name matches a label under it');
  assert.equal(chain[0].checkHost('a.b.apps.berth-acme.test'), undefined, 'a wildcard covers one label');
  assert.ok(chain[0].checkPrivateKey(createPrivateKey(key)));
  assert.ok(chain[chain.length - 1].verify(new X509Certificate(await pebble.rootCertPem()).publicKey));
});
