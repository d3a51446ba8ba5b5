// @store-independent: what it checks is MongoDB's dump and restore in containers, the same on either store.
/**
 * MongoDB backups and restores on the `docker` runtime (issue 37 point 4, contract section 19): a
 * policy naming a MongoDB service runs `mongodump --archive --gzip` inside its container through the
 * verified pipeline (`<runId>.archive`, sha256, restore-tested: `verifiedAt`); after a change, a
 * restore makes a fresh instance from the artifact with `mongorestore`, checks it holds the documents,
 * swaps it in, and the app reads the old data through MONGODB_URL. The password is never in a dump
 * program's arguments, the run, or the service log.
 *
 * It needs a real MongoDB: the image BERTH_IMAGE_MONGODB names (default `mongo:7`, whose image ships
 * mongosh, mongodump and mongorestore) present in the local engine; skipped with the reason otherwise
 * (no registry is reachable from CI, and MongoDB has no Debian package to build one from).
 */
import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { managedServiceEnv } from '../../src/modules/services/index.js';
import { networkName } from '../../src/runtime/docker/containers.js';
import { instanceKeyOf } from '../../src/runtime/drivers.js';
import { waitTerminal } from '../backups/helpers.js';
import { dockerSuite } from '../support/docker.js';
import { createDestination, createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { serviceRunning } from './helpers.js';

const MONGO = process.env.BERTH_IMAGE_MONGODB || 'mongo:7';
const { engine, skip: noEngine } = await dockerSuite('test/services/mongodb-docker');
const missing = !noEngine && !(await engine.api.getImage(MONGO).inspect().then(() => true, () => false));
const skip = noEngine ?? (missing ? `the MongoDB image ${MONGO} is not in the local engine (no registry here; set BERTH_IMAGE_MONGODB to a local MongoDB image to run it)` : null);
if (missing) console.log(`# test/services/mongodb-docker: skipping: ${skip}`);

describe('MongoDB backups and restores on the docker runtime', { skip: skip ?? false }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  const api = () => server.api(owner.token);

  before(async () => {
    dir = tempDir('berth-svc-mongo-');
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), env: { BERTH_RUNTIME: 'docker', BERTH_IMAGE_MONGODB: MONGO } });
    owner = await createUser(server);
    await waitFor(() => server.ctx.state.services.runner, 'the services runner', 30_000, 50);
  });
  after(async () => {
    await server?.close();
    if (server) for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${instanceKeyOf(server.dataDir)}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs mongosh `code` against the project's MONGODB_URL (read from its environment, not its arguments) in a container on the project's network. */
  async function mongosh(projectId: string, code: string): Promise<string> {
    const { env } = await managedServiceEnv(server.ctx, owner.orgId, projectId);
    const c = await engine.api.createContainer({
      Image: MONGO,
      Entrypoint: [],
      Cmd: ['mongosh', '--nodb', '--quiet', '--norc', '--eval', `const d = connect(process.env.MONGODB_URL); ${code}`],
      Env: [`MONGODB_URL=${env.MONGODB_URL}`],
      User: '1000:1000',
      Tty: true,
      HostConfig: { NetworkMode: networkName(instanceKeyOf(server.dataDir), projectId) },
    });
    try {
      await c.start();
      const { StatusCode } = (await c.wait()) as { StatusCode: number };
      const out = ((await c.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString('utf8').trim();
      assert.equal(StatusCode, 0, out);
      return out;
    } finally {
      await c.remove({ force: true }).catch(() => {});
    }
  }

  it('mongodump --archive through the verified pipeline, restore-tested; a change, a restore into a fresh instance swapped in: the old documents are back', async () => {
    const p = await createProject(server, owner);
    const created = await api().post(`/api/projects/${p.id}/services`, { kind: 'mongodb', name: 'docs' });
    assert.equal(created.status, 201, created.text);
    const s = await serviceRunning(server, owner.token, p.id, created.body.data.id, 180_000);
    const creds = (await api().get(`/api/projects/${p.id}/services/${s.id}/credentials`)).body.data;
    await mongosh(p.id, "d.notes.insertMany([{ _id: 1, body: 'before' }, { _id: 2, body: 'kept' }]); d.getSiblingDB('other').things.insertOne({ n: 1 })");

    const dest = await createDestination(server, owner);
    const pol = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: s.id, verifyRestore: true });
    assert.equal(pol.status, 201, pol.text);
    const runId = (await api().post(`/api/backup-policies/${pol.body.data.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 180_000);
    assert.equal(run.status, 'succeeded', run.error);
    assert.ok(readdirSync(dest.dir, { recursive: true }).map(String).some((f) => f.endsWith(`${runId}.archive`)), 'the artifact is final');
    const verified = await waitFor(async () => {
      const r = (await api().get(`/api/backup-runs/${runId}`)).body.data;
      return r.verifiedAt || r.verifyError ? r : null;
    }, 'the run restore-tested', 240_000, 250);
    assert.equal(verified.verifyError, null, 'the restore test passed');
    assert.ok(!JSON.stringify(verified).includes(creds.password));
    // The dump's --config file is gone with the dump.
    const conf = path.join(server.ctx.state.services.runner!.volumeDir({ projectId: p.id, id: s.id }), 'conf');
    assert.deepEqual(readdirSync(conf).filter((f) => f.startsWith('berth-mongo-tools-')), []);

    await mongosh(p.id, "d.notes.updateOne({ _id: 1 }, { $set: { body: 'after' } }); d.later.insertOne({ x: 1 })");
    const prep = await api().post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const applied = await api().post(`/api/backup-restores/${prep.body.data.restoreId}/apply`, { confirmationToken: prep.body.data.confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const r = await waitTerminal(server, owner.token, `/api/backup-restores/${prep.body.data.restoreId}`, 300_000);
    assert.equal(r.status, 'succeeded', r.error);
    await serviceRunning(server, owner.token, p.id, s.id, 180_000);

    const read = await mongosh(p.id, "print(JSON.stringify([d.notes.find().sort({ _id: 1 }).toArray().map((n) => n.body), d.later.countDocuments(), d.getSiblingDB('other').things.countDocuments()]))");
    assert.equal(read.split('\n').pop(), JSON.stringify([['before', 'kept'], 0, 1]));
    assert.ok(!server.ctx.state.services.runner!.logs(s.id).join('\n').includes(creds.password), 'the service log has no password');
  });
});
