import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { CloudflareDnsProvider } from '../../../src/edge/acme/cloudflare.js';
import { DnsProviderError, zoneCandidates } from '../../../src/edge/acme/dns-providers.js';
import { startFakeCloudflare } from '../../support/fake-cloudflare.js';

test('cloudflare: a TXT record is published in the zone found by walking up from a subdomain, with a 60 s TTL', async (t) => {
  const txt = new Map<string, string[]>();
  const cf = await startFakeCloudflare({ zones: ['example.com'], txt });
  t.after(() => cf.close());
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });

  const { id } = await provider.createTxt('app.example.com', '_acme-challenge.app.example.com', 'value-1');

  assert.equal(provider.name, 'cloudflare');
  assert.deepEqual(
    cf.records.map((r) => ({ zone: r.zoneId, type: r.type, name: r.name, content: r.content, ttl: r.ttl })),
    [{ zone: cf.zones.get('example.com'), type: 'TXT', name: '_acme-challenge.app.example.com', content: 'value-1', ttl: 60 }],
  );
  assert.equal(id, `${cf.zones.get('example.com')}/${cf.records[0].id}`);
  assert.deepEqual(cf.requests.slice(0, 2), ['GET /client/v4/zones?name=app.example.com', 'GET /client/v4/zones?name=example.com']);
  assert.deepEqual(txt.get('_acme-challenge.app.example.com'), ['value-1'], 'mirrored into a DNS stub map');

  // The zone is remembered: a second record costs no lookup.
  const before = cf.requests.length;
  await provider.createTxt('app.example.com', '_acme-challenge.app.example.com', 'value-2');
  assert.deepEqual(cf.requests.slice(before), [`POST /client/v4/zones/${cf.zones.get('example.com')}/dns_records`]);
  assert.deepEqual(txt.get('_acme-challenge.app.example.com'), ['value-1', 'value-2']);
});

test("cloudflare: a wildcard's base name finds its zone, and the longest hosted zone wins", async (t) => {
  const cf = await startFakeCloudflare({ zones: ['example.com', 'dev.example.com'] });
  t.after(() => cf.close());
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });

  await provider.createTxt('*.example.com', '_acme-challenge.example.com', 'apex');
  await provider.createTxt('*.dev.example.com', '_acme-challenge.dev.example.com', 'dev');

  const byName = Object.fromEntries(cf.records.map((r) => [r.name, r.zoneId]));
  assert.deepEqual(byName, {
    '_acme-challenge.example.com': cf.zones.get('example.com'),
    '_acme-challenge.dev.example.com': cf.zones.get('dev.example.com'),
  });
  assert.deepEqual(zoneCandidates('*.A.b.Example.com.'), ['a.b.example.com', 'b.example.com', 'example.com']);
});

test('cloudflare: removing a record deletes it; removing it again is not an error; an identical record is reused', async (t) => {
  const txt = new Map<string, string[]>();
  const cf = await startFakeCloudflare({ zones: ['example.com'], txt });
  t.after(() => cf.close());
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });

  const first = await provider.createTxt('example.com', '_acme-challenge.example.com', 'same');
  const again = await provider.createTxt('example.com', '_acme-challenge.example.com', 'same');
  assert.equal(again.id, first.id, 'a retried publish answers the existing record');
  assert.equal(cf.records.length, 1);

  await provider.removeTxt('_acme-challenge.example.com', first.id);
  assert.deepEqual(cf.records, []);
  assert.equal(txt.has('_acme-challenge.example.com'), false);
  await provider.removeTxt('_acme-challenge.example.com', first.id);

  await assert.rejects(provider.removeTxt('_acme-challenge.example.com', 'not-an-id'), (e: DnsProviderError) => {
    assert.match(e.message, /not an id the Cloudflare provider gave out/);
    return true;
  });
});

test('cloudflare: a refused token is a clear, non-retryable error that never shows the token', async (t) => {
  const cf = await startFakeCloudflare({ zones: ['example.com'] });
  t.after(() => cf.close());
  const badToken = 'wrong-token-7f3a9c2e5b';
  const provider = new CloudflareDnsProvider({ apiToken: badToken, baseUrl: cf.baseUrl });

  await assert.rejects(provider.createTxt('example.com', '_acme-challenge.example.com', 'v'), (e: unknown) => {
    assert.ok(e instanceof DnsProviderError);
    assert.equal(e.provider, 'cloudflare');
    assert.equal(e.operation, 'find-zone');
    assert.equal(e.retryable, false);
    assert.equal(e.status, 403);
    assert.match(e.message, /Cloudflare refused the API token \(BERTH_CLOUDFLARE_API_TOKEN\) while looking up the zone of example\.com: Authentication error \(code 10000\)/);
    assert.ok(!e.message.includes(badToken) && !String(e.stack).includes(badToken), 'the token is not in the error');
    return true;
  });
  assert.deepEqual(cf.records, []);
});

test('cloudflare: a name in no hosted zone is a clear, non-retryable error', async (t) => {
  const cf = await startFakeCloudflare({ zones: ['example.com'] });
  t.after(() => cf.close());
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });

  await assert.rejects(provider.createTxt('*.shop.example.org', '_acme-challenge.shop.example.org', 'v'), (e: unknown) => {
    assert.ok(e instanceof DnsProviderError);
    assert.equal(e.retryable, false);
    assert.match(e.message, /Cloudflare has no zone for shop\.example\.org or any of its parent domains that the API token can see/);
    return true;
  });
  assert.deepEqual(cf.requests, ['GET /client/v4/zones?name=shop.example.org', 'GET /client/v4/zones?name=example.org']);
});

test('cloudflare: an outage and a silent server are retryable errors, bounded by the timeout', async (t) => {
  const cf = await startFakeCloudflare({ zones: ['example.com'] });
  t.after(() => cf.close());
  cf.failWith = 503;
  const provider = new CloudflareDnsProvider({ apiToken: cf.token, baseUrl: cf.baseUrl });
  await assert.rejects(provider.createTxt('example.com', '_acme-challenge.example.com', 'v'), (e: unknown) => {
    assert.ok(e instanceof DnsProviderError);
    assert.equal(e.retryable, true);
    assert.equal(e.status, 503);
    assert.match(e.message, /Cloudflare failed looking up the zone of example\.com: service unavailable \(code 10001\)/);
    return true;
  });

  const silent = http.createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
  const slow = new CloudflareDnsProvider({
    apiToken: cf.token,
    baseUrl: `http://127.0.0.1:${(silent.address() as { port: number }).port}`,
    timeoutMs: 300,
  });
  const started = Date.now();
  await assert.rejects(slow.removeTxt('_acme-challenge.example.com', 'zone/record'), (e: unknown) => {
    assert.ok(e instanceof DnsProviderError);
    assert.equal(e.retryable, true);
    assert.match(e.message, /could not reach Cloudflare while removing the TXT record _acme-challenge\.example\.com: no answer within 300 ms/);
    return true;
  });
  assert.ok(Date.now() - started < 5000);
});
