// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth transfer to-cloud|to-self-hosted [PROJECT] [--include-data]` (docs/cloud.md, docs/services.md
 * "Transfers") against a real self-hosted server linked to a real cloud server: the transfer there and
 * back with what moved printed, and a stopped managed service refusing `--include-data` with a clear
 * error before anything is made on the cloud. (The data itself moving: test/cloud/services-transfer.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useCloudPair } from '../support/cloud-pair.js';
import { cliUser } from './commands-support.js';

describe('berth transfer', () => {
  const pair = useCloudPair();

  it('to-cloud --include-data moves the project and prints what moved; to-self-hosted --json brings it back; to-cloud --json answers the transfer', async () => {
    const cli = cliUser(pair.self, pair.team.owner.token);
    const p = await pair.shopProject();
    const there = await cli.run(['transfer', 'to-cloud', p.id, '--include-data'], { timeoutMs: 120_000 });
    assert.equal(there.code, 0, there.stderr);
    const location = async () => (await pair.self.ctx.db.selectFrom('projects').select('location').where('id', '=', p.id).executeTakeFirstOrThrow()).location;
    assert.equal(await location(), 'cloud');
    const cloudId = (await pair.self.ctx.db.selectFrom('cloudLinks').select('cloudProjectId').where('projectId', '=', p.id).executeTakeFirstOrThrow()).cloudProjectId;
    assert.match(there.stdout, new RegExp(`moved to the cloud as ${cloudId}`));
    assert.match(there.stdout, /managed services: none/);
    assert.match(there.stdout, /services' data: +none/);
    assert.match(there.stdout, /env vars: +2 \(1 secret\)/);
    assert.ok(!there.stdout.includes(pair.SECRET) && !there.stderr.includes(pair.SECRET), 'no secret value printed');

    const back = await cli.run(['transfer', 'to-self-hosted', p.id, '--json'], { timeoutMs: 120_000 });
    assert.equal(back.code, 0, back.stderr);
    const t = JSON.parse(back.stdout);
    assert.equal(t.location, 'local');
    assert.equal(t.cloudProjectId, cloudId);
    assert.equal(t.cloudCopyDeleted, true);
    assert.equal(t.transferred.serviceData, undefined, 'without --include-data no data is asked for');
    assert.equal(await location(), 'local');

    // And once more with --json: the API's answer, parseable, on stdout.
    const again = await cli.run(['transfer', 'to-cloud', p.id, '--json'], { timeoutMs: 120_000 });
    assert.equal(again.code, 0, again.stderr);
    const a = JSON.parse(again.stdout);
    assert.equal(a.location, 'cloud');
    assert.ok(!again.stdout.includes(pair.SECRET), 'no secret value printed');
    assert.equal(await location(), 'cloud');
  });

  it('to-cloud --include-data with a stopped managed service exits 1 naming the service and the flag; nothing moves', async () => {
    const cli = cliUser(pair.self, pair.team.owner.token);
    const p = await pair.shopProject();
    // A stopped Redis as the services area keeps it (this pair runs no database servers: it needs none to refuse).
    const now = new Date().toISOString();
    await pair.self.ctx.db
      .insertInto('managedServices')
      .values({ id: `svc_${'i'.repeat(20)}`, orgId: pair.team.orgId, projectId: p.id, kind: 'redis', name: 'idle', version: '7', runtime: 'sandbox', desired: 'stopped', status: 'stopped', cpuCores: 0.5, memoryMb: 256, diskMb: 1024, port: 6379, credentials: 'x', lastError: null, environment: 'production', sourceId: null, seedFrom: null, address: null, createdAt: now, updatedAt: now })
      .execute();
    const before = (await pair.cloud.ctx.db.selectFrom('projects').select('id').execute()).length;
    const res = await cli.run(['transfer', 'to-cloud', p.id, '--include-data']);
    assert.equal(res.code, 1, res.stdout);
    assert.match(res.stderr, /^error: the service idle is stopped: start it to move its data, or transfer without --include-data \(field: --include-data\) \[CONFLICT\]$/m);
    assert.equal((await pair.self.api(pair.team.owner.token).get(`/api/projects/${p.id}`)).body.data.location, 'local');
    assert.equal((await pair.cloud.ctx.db.selectFrom('projects').select('id').execute()).length, before, 'nothing was made on the cloud');
  });
});
