// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth domains ls|add|rm|verify` against a server that verifies domains by DNS
 * (BERTH_DOMAIN_VERIFICATION=dns) asking a stub DNS server: the TXT record to create is printed for
 * an unverified domain, `verify` exits 1 until the record is there, and refusals exit 1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

describe('berth domains', () => {
  let server: TestServer;
  let dns: DnsStub;
  let alice: TestUser;
  let project: TestProject;
  let cli: CliUser;
  const DOMAIN = 'shop.example.test';


  before(async () => {
    dns = await startDnsStub();
    server = await startTestServer({ env: { BERTH_DOMAIN_VERIFICATION: 'dns', BERTH_DNS_SERVERS: dns.server } });
    alice = await createUser(server);
    project = await createProject(server, alice, { name: 'Shop' });
    cli = cliUser(server, alice.token);
  });
  after(async () => {
    await server?.close();
    await dns?.close();
  });

  it('`domains ls` on a project without custom domains says so', async () => {
    const res = await cli.run(['domains', 'ls', project.slug]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^no custom domains on shop/);
  });

  it('`domains add` adds an unverified domain and prints the TXT record that verifies it', async () => {
    const res = await cli.run(['domains', 'add', project.slug, DOMAIN, '--primary']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), `added ${DOMAIN} to shop (primary) (not verified yet)`);
    const rec = (await server.api(alice.token).get(`/api/projects/${project.id}/domains`)).body.data[0];
    assert.equal(rec.verified, false);
    assert.match(res.stderr, new RegExp(`create this DNS record, then run \`berth domains verify shop ${DOMAIN}\``));
    assert.ok(res.stderr.includes(`TXT  _berth-challenge.${DOMAIN}  "${rec.verification.value}"`), res.stderr);
  });

  it('`domains ls` shows domain, primary, verified, TLS and age, and the TXT record; `--json` the records', async () => {
    const [table, json] = await Promise.all([cli.run(['domains', 'ls', project.slug]), cli.run(['domains', 'list', project.slug, '--json'])]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(lines(table.stdout)[0]!, /^DOMAIN\s+PRIMARY\s+VERIFIED\s+TLS\s+AGE$/);
    assert.match(lines(table.stdout)[1]!, new RegExp(`^${DOMAIN.replace(/\./g, '\\.')}\\s+yes\\s+no\\s+none\\s+\\d+[smhd]$`));
    assert.match(table.stderr, new RegExp(`TXT  _berth-challenge\\.${DOMAIN.replace(/\./g, '\\.')}  "berth-verify=`));
    const list = JSON.parse(json.stdout);
    assert.equal(list.length, 1);
    assert.equal(list[0].domain, DOMAIN);
    assert.deepEqual(Object.keys(list[0].verification).sort(), ['name', 'type', 'value']);
  });

  it('`domains verify` exits 1 with the server\'s message until the TXT record exists, then 0', async () => {
    const missing = await cli.run(['domains', 'verify', project.slug, DOMAIN]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no TXT record at _berth-challenge\.shop\.example\.test .*\(field: domain\)/);
    const rec = (await server.api(alice.token).get(`/api/projects/${project.id}/domains`)).body.data[0];
    dns.txt.set(`_berth-challenge.${DOMAIN}`, [rec.verification.value]);
    const ok = await cli.run(['domains', 'verify', project.slug, DOMAIN, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const d = JSON.parse(ok.stdout);
    assert.equal(d.verified, true);
    assert.ok(!d.verification);
    const table = await cli.run(['domains', 'ls', project.slug]);
    assert.match(table.stdout, /shop\.example\.test\s+yes\s+yes/);
    assert.equal(table.stderr, '');
  });

  it('`domains add` refusals name the field (1): a bad name, a domain under the free-domain suffix', async () => {
    const [bad, free] = await Promise.all([
      cli.run(['domains', 'add', project.slug, 'not a domain!']),
      cli.run(['domains', 'add', project.slug, `x.${server.config.appsDomain}`]),
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: .*\(field: domain\) \[VALIDATION_FAILED\]$/m);
    assert.equal(free.code, 1);
    assert.match(free.stderr, /field: domain/);
  });

  it("`domains` on another org's project is refused (1); missing arguments are usage errors (2)", async () => {
    const bob = await createUser(server);
    const theirs = await createProject(server, bob);
    const [foreign, noDomain, noProject] = await Promise.all([
      cli.run(['domains', 'add', theirs.id, 'other.example.test']),
      cli.run(['domains', 'add', project.slug]),
      cli.run(['domains', 'ls']),
    ]);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /no project/);
    assert.equal(noDomain.code, 2);
    assert.equal(noProject.code, 2);
  });

  it('`domains rm` removes it (0); removing it again is refused (1)', async () => {
    const res = await cli.run(['domains', 'rm', project.slug, DOMAIN]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), `removed ${DOMAIN} from shop`);
    assert.deepEqual((await server.api(alice.token).get(`/api/projects/${project.id}/domains`)).body.data, []);
    const again = await cli.run(['domains', 'rm', project.slug, DOMAIN, '--json']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /NOT_FOUND/);
  });
});
