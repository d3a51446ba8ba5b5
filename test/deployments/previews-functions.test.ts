/**
 * The preview functions other areas call (contract section 16; the GitHub App's pull requests), against
 * a real server (start shared through test/support/preview-server.ts): preview environments made and
 * moved by branch, the branch a preview deployment builds, and the deployment-settled listeners, told
 * once per settled deployment.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { environmentUrl, ensurePreviewEnvironment, removePreviewEnvironment } from '../../src/modules/deployments/index.js';
import { actorOf } from '../support/factories.js';
import { usePreviewServer } from '../support/preview-server.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const ps = usePreviewServer();
const { edgePort, uploadApp, deploy, settled } = ps;

describe('the preview functions other areas call', () => {
  test('ensurePreviewEnvironment creates, then moves to a new branch (and host); branches that slug alike get a hash suffix; production is refused', async () => {
    const p = await ps.api.post('/api/projects', { name: 'Pulls' });
    const project = p.body.data;
    const actor = actorOf(ps.owner);
    const a = await ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'pr-1', branch: 'main' });
    assert.equal(a.domain, `main--${project.slug}.localhost`);
    const again = await ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'pr-1', branch: 'main' });
    assert.equal(again.id, a.id);
    // A fork's `main` (another pull request) slugs alike: it gets a suffix of its own.
    const b = await ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'pr-2', branch: 'main' });
    assert.match(b.domain!, new RegExp(`^main-[0-9a-f]{6}--${project.slug}\\.localhost$`));
    assert.equal(environmentUrl(ps.server.ctx, project, b), b.url);
    const moved = await ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'pr-1', branch: 'feature/x' });
    assert.equal(moved.id, a.id);
    assert.equal(moved.branch, 'feature/x');
    assert.equal(moved.domain, `feature-x--${project.slug}.localhost`);
    // A long branch is cut so the label stays within 63 characters.
    const long = await ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'pr-3', branch: `feature/${'very-long-name-'.repeat(10)}` });
    assert.ok(long.domain!.split('.')[0]!.length <= 63, long.domain!);
    await assert.rejects(ensurePreviewEnvironment(ps.server.ctx, actor, project, { name: 'production', branch: 'main' }), (e: any) => e.code === 'VALIDATION_FAILED' && e.field === 'name');
    await removePreviewEnvironment(ps.server.ctx, actor, project, 'pr-2');
    await removePreviewEnvironment(ps.server.ctx, actor, project, 'pr-2');
    assert.deepEqual((await ps.api.get(`/api/projects/${project.id}/environments`)).body.data.map((e: any) => e.name), ['production', 'pr-1', 'pr-3']);
  });

  test("a deployment of a preview builds the preview's branch unless a ref is given; production builds the deploy branch", async () => {
    const p = await ps.api.post('/api/projects', { name: 'Git Previews', gitOwner: 'acme', gitRepo: 'web', gitBranch: 'main' });
    assert.equal(p.status, 201, p.text);
    const project = p.body.data;
    await ps.server.ctx.db.updateTable('projects').set({ sourceType: 'git' }).where('id', '=', project.id).execute();
    await ensurePreviewEnvironment(ps.server.ctx, actorOf(ps.owner), project, { name: 'pr-5', branch: 'feature/y' });
    const refOf = async (body: Record<string, unknown>) => {
      const res = await ps.api.post('/api/deployments', { projectId: project.id, ...body });
      assert.equal(res.status, 202, res.text);
      await waitForDeployment(ps.api, res.body.data.id);
      return res.body.data.ref;
    };
    assert.equal(await refOf({ environment: 'pr-5' }), 'feature/y');
    assert.equal(await refOf({ environment: 'pr-5', ref: 'other' }), 'other');
    assert.equal(await refOf({}), 'main');
  });

  test('the deployment-settled listeners are told once, after the status is committed: ready with the URL, failed with the error', async () => {
    const p = await ps.api.post('/api/projects', { name: 'Settle' });
    const project = p.body.data;
    const ok = await deploy(project.id, 'production', await uploadApp('settle-v1'));
    assert.equal(ok.status, 'ready', ok.error);
    const calls = await waitFor(() => {
      const c = settled.filter((d) => d.id === ok.id);
      return c.length ? c : null;
    }, 'the ready deployment to be told');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled.filter((d) => d.id === ok.id).length, 1, 'told once');
    assert.deepEqual(calls[0], {
      id: ok.id,
      orgId: ps.owner.orgId,
      projectId: project.id,
      environment: 'production',
      status: 'ready',
      commit: ok.commit,
      ref: ok.ref,
      error: null,
      url: `http://${project.slug}.localhost:${edgePort()}`,
    });

    const b = await ps.api.post('/api/projects', { name: 'Settle Broken', buildCommand: 'node -e "process.exit(3)"' });
    assert.equal(b.status, 201, b.text);
    const bad = await deploy(b.body.data.id, 'production', await uploadApp('settle-broken'));
    assert.equal(bad.status, 'failed');
    const told = await waitFor(() => settled.find((d) => d.id === bad.id), 'the failed deployment to be told');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled.filter((d) => d.id === bad.id).length, 1, 'told once');
    assert.equal(told.status, 'failed');
    assert.equal(told.environment, 'production');
    assert.equal(told.projectId, b.body.data.id);
    assert.equal(told.error, bad.error);
    assert.match(told.error ?? '', /exit|code 3/);
    assert.equal(told.url, null, 'not served: it never had a release');
  });
});
