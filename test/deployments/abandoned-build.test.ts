/**
 * A build whose process died (kill -9, a lost machine; with several instances on one PostgreSQL,
 * another instance carries on): its job's claim runs out, the job is claimed again, and the
 * deployment it left `building` is failed, naming why, instead of staying in flight forever. A build
 * another live process still holds (its claim renewed) is left alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/lib/ids.js';
import { createDeployment, createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

describe('a build left in flight by a dead process', () => {
  let server: TestServer;
  let owner: TestUser;
  before(async () => {
    server = await startTestServer({ background: true });
    owner = await createUser(server);
  });
  after(() => server?.close());

  /** A deployment `building` and its build job claimed by another process, its claim ending at `lockedUntil`. */
  async function claimedElsewhere(lockedUntil: Date): Promise<{ deploymentId: string; jobId: string; orgId: string }> {
    const project = await createProject(server, owner);
    const deploymentId = await createDeployment(server, { id: project.id, orgId: owner.orgId }, { status: 'building', finished: false });
    const jobId = newId('job');
    const at = new Date(Date.now() - 120_000).toISOString();
    await server.ctx.db
      .insertInto('jobs')
      .values({
        id: jobId,
        kind: 'deployment.build',
        payload: JSON.stringify({ deploymentId, orgId: owner.orgId }),
        status: 'running',
        attempts: 1,
        maxAttempts: 1,
        runAt: at,
        lockedBy: 'an-instance-that-died',
        lockedUntil: lockedUntil.toISOString(),
        lastError: null,
        orgId: owner.orgId,
        createdAt: at,
        updatedAt: at,
      })
      .execute();
    return { deploymentId, jobId, orgId: owner.orgId };
  }

  it('is failed with the reason once its claim runs out, and a build whose claim is renewed is left alone', async () => {
    const held = await claimedElsewhere(new Date(Date.now() + 10 * 60_000));
    const dead = await claimedElsewhere(new Date(Date.now() - 1000));
    const api = server.api(owner.token);
    const failed = await waitFor(async () => {
      const r = await api.get(`/api/deployments/${dead.deploymentId}`);
      return r.body.data?.status === 'failed' ? r.body.data : undefined;
    }, 'the abandoned build to fail');
    assert.match(failed.error, /interrupted: the Berth instance running this build stopped/);
    assert.ok(failed.finishedAt);
    const job = await server.ctx.db.selectFrom('jobs').selectAll().where('id', '=', dead.jobId).executeTakeFirstOrThrow();
    assert.equal(job.status, 'succeeded', 'the job is done with: nothing runs it again');

    const still = await api.get(`/api/deployments/${held.deploymentId}`);
    assert.equal(still.body.data.status, 'building');
    const heldJob = await server.ctx.db.selectFrom('jobs').selectAll().where('id', '=', held.jobId).executeTakeFirstOrThrow();
    assert.equal(heldJob.lockedBy, 'an-instance-that-died');
    assert.equal(heldJob.status, 'running');
  });
});
