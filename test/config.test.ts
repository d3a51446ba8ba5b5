import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

/** Settings of issue 18 (contract section 12): releases kept, domain verification, the DNS servers it asks. */
describe('configuration of releases and domains', () => {
  const load = (env: Record<string, string>, mode?: string) => loadConfig({ dataDir: '/tmp/berth-config-test', ...(mode ? { mode } : {}) }, env);

  it('keeps 5 releases by default; BERTH_RELEASES_KEPT takes a whole number from 1 to 100', () => {
    assert.equal(load({}).releasesKept, 5);
    assert.equal(load({ BERTH_RELEASES_KEPT: '1' }).releasesKept, 1);
    for (const bad of ['0', '101', '2.5', 'many']) {
      assert.throws(() => load({ BERTH_RELEASES_KEPT: bad }), (e: Error) => e instanceof ConfigError && /BERTH_RELEASES_KEPT/.test(e.message), bad);
    }
  });

  it('opens at most 10 PostgreSQL connections, prepares up to 100 statements on each and commits without waiting for the disk by default; BERTH_PG_POOL_MAX and BERTH_PG_PREPARED take whole numbers, BERTH_PG_SYNCHRONOUS_COMMIT a synchronous_commit level', () => {
    assert.deepEqual(load({}).pg, { poolMax: 10, preparePerConnection: 100, synchronousCommit: 'off' });
    assert.deepEqual(load({ BERTH_PG_POOL_MAX: '4', BERTH_PG_PREPARED: '0', BERTH_PG_SYNCHRONOUS_COMMIT: 'on' }).pg, { poolMax: 4, preparePerConnection: 0, synchronousCommit: 'on' });
    const bads = [['BERTH_PG_POOL_MAX', '0'], ['BERTH_PG_POOL_MAX', '2.5'], ['BERTH_PG_PREPARED', '-1'], ['BERTH_PG_PREPARED', 'lots'], ['BERTH_PG_SYNCHRONOUS_COMMIT', 'yes'], ['BERTH_PG_SYNCHRONOUS_COMMIT', "off'; drop table users; --"]] as const;
    for (const [name, bad] of bads) {
      assert.throws(() => load({ [name]: bad }), (e: Error) => e instanceof ConfigError && e.message.includes(name), `${name}=${bad}`);
    }
  });

  it('names this instance among several on one PostgreSQL (BERTH_INSTANCE_NAME, BERTH_INSTANCE_URL) and takes the two lease ttls as whole numbers', () => {
    assert.deepEqual(load({}).instance, { name: null, url: null, leaderTtlMs: 10000, appOwnerTtlSeconds: 10 });
    assert.deepEqual(load({ BERTH_INSTANCE_NAME: 'm2', BERTH_INSTANCE_URL: 'http://10.0.0.12:7380/', BERTH_LEADER_TTL_MS: '3000', BERTH_APP_OWNER_TTL_SECONDS: '4' }).instance, {
      name: 'm2',
      url: 'http://10.0.0.12:7380',
      leaderTtlMs: 3000,
      appOwnerTtlSeconds: 4,
    });
    for (const [name, bad] of [
      ['BERTH_INSTANCE_NAME', 'M2'],
      ['BERTH_INSTANCE_NAME', '-m'],
      ['BERTH_INSTANCE_URL', 'https://10.0.0.12:7380'],
      ['BERTH_INSTANCE_URL', 'http://10.0.0.12'],
      ['BERTH_INSTANCE_URL', 'http://10.0.0.12:7380/edge'],
      ['BERTH_LEADER_TTL_MS', '999'],
      ['BERTH_LEADER_TTL_MS', 'soon'],
      ['BERTH_APP_OWNER_TTL_SECONDS', '1'],
      ['BERTH_APP_OWNER_TTL_SECONDS', '2.5'],
    ] as const) {
      assert.throws(() => load({ [name]: bad }), (e: Error) => e instanceof ConfigError && e.message.includes(name), `${name}=${bad}`);
    }
  });

  it('runs Swarm services only with the docker runtime; BERTH_REGISTRY is a registry address without a scheme', () => {
    assert.deepEqual(load({}).docker, { swarm: false, registry: null, baseImages: {} });
    assert.deepEqual(load({ BERTH_RUNTIME: 'docker', BERTH_DOCKER_SWARM: '1', BERTH_REGISTRY: 'registry.example.com:5000/team/' }).docker, { swarm: true, registry: 'registry.example.com:5000/team', baseImages: {} });
    assert.throws(() => load({ BERTH_DOCKER_SWARM: '1' }), /needs the docker runtime/);
    assert.throws(() => load({ BERTH_RUNTIME: 'docker', BERTH_DOCKER_SWARM: 'yes' }), /BERTH_DOCKER_SWARM must be 1 or 0/);
    assert.throws(() => load({ BERTH_REGISTRY: 'https://registry.example.com' }), /BERTH_REGISTRY must be a registry address/);
  });

  it('verifies domains with none on a self-hosted instance and dns on a cloud one, which refuses none', () => {
    assert.equal(load({}).domainVerification, 'none');
    assert.equal(load({ BERTH_DOMAIN_VERIFICATION: 'dns' }).domainVerification, 'dns');
    assert.equal(load({}, 'cloud').domainVerification, 'dns');
    assert.throws(() => load({ BERTH_DOMAIN_VERIFICATION: 'none' }, 'cloud'), /refused in cloud mode/);
    assert.throws(() => load({ BERTH_DOMAIN_VERIFICATION: 'txt' }), /must be "none" or "dns"/);
  });

  it('BERTH_DNS_SERVERS lists IP addresses with optional ports; a host name is refused at start-up', () => {
    assert.deepEqual(load({}).dnsServers, []);
    assert.deepEqual(load({ BERTH_DNS_SERVERS: '127.0.0.1:5353, 1.1.1.1,::1,[::1]:53' }).dnsServers, ['127.0.0.1:5353', '1.1.1.1', '::1', '[::1]:53']);
    for (const bad of ['dns.example.com', '127.0.0.1:0', '127.0.0.1:99999', '[::1']) {
      assert.throws(() => load({ BERTH_DNS_SERVERS: bad }), (e: Error) => e instanceof ConfigError && /BERTH_DNS_SERVERS/.test(e.message), bad);
    }
  });
});
