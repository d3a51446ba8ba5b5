/**
 * Promoting a preview (contract section 16, issue 22 point 3), against a real server with the real
 * runtime and the edge (start shared through test/support/preview-server.ts): a ready preview
 * deployment's build goes to production without a rebuild through the zero-downtime swap, and what
 * cannot be promoted is refused.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeployment, createUser } from '../support/factories.js';
import { assertError } from '../support/http.js';
import { usePreviewServer } from '../support/preview-server.js';

const ps = usePreviewServer();
const { edge, uploadApp, deploy, buildLog } = ps;

describe('promote', () => {
  let project: { id: string; slug: string; orgId: string };
  let prod: any;
  let candidate: any;
  const prodHost = () => `${project.slug}.localhost`;

  before(async () => {
    const p = await ps.api.post('/api/projects', { name: 'Promote Me' });
    assert.equal(p.status, 201, p.text);
    project = p.body.data;
    await ps.api.patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'GREETING', value: 'production-value' }] });
    prod = await deploy(project.id, 'production', await uploadApp('promote-v1'));
    assert.equal(prod.status, 'ready', prod.error);
    const env = await ps.api.post(`/api/projects/${project.id}/environments`, { name: 'next', branch: 'next' });
    assert.equal(env.status, 201, env.text);
    await ps.api.patch(`/api/projects/${project.id}/env`, { environment: 'next', upserts: [{ key: 'GREETING', value: 'preview-value' }] });
    candidate = await deploy(project.id, 'next', await uploadApp('promote-v2'));
    assert.equal(candidate.status, 'ready', candidate.error);
    assert.match((await edge(`next--${project.slug}.localhost`)).text, /^hello promote-v2/);
  });

  test("promote puts the preview's build into production with no failed request during the swap and no build; production's variables apply", async () => {
    const before = (await ps.api.get(`/api/projects/${project.id}/deployments`)).body.data.length;
    const candidateLog = await buildLog(candidate.id);
    let swapping = true;
    const seen: number[] = [];
    const traffic = (async () => {
      while (swapping) seen.push((await edge(prodHost())).status);
    })();
    const res = await ps.api.post(`/api/projects/${project.id}/environments/next/promote`);
    swapping = false;
    await traffic;
    assert.equal(res.status, 202, res.text);
    const promoted = res.body.data;
    assert.equal(promoted.environment, 'production');
    assert.equal(promoted.status, 'ready');
    assert.equal(promoted.trigger, 'promote');
    assert.equal(promoted.promotedFrom, candidate.id);
    assert.equal(promoted.current, true);
    assert.notEqual(promoted.id, candidate.id);
    assert.ok(seen.length > 0 && seen.every((s) => s === 200), `statuses during the swap: ${seen.join(',')}`);

    assert.match((await edge(prodHost())).text, /^hello promote-v2/);
    assert.equal((await edge(prodHost(), '/env/GREETING')).text, 'production-value', "the app runs with production's variables");
    assert.match((await edge(`next--${project.slug}.localhost`)).text, /^hello promote-v2/, 'the preview keeps serving');
    assert.equal((await ps.api.get(`/api/projects/${project.id}/deployments`)).body.data.length, before + 1, 'one production deployment record, no build');
    assert.equal((await ps.api.get(`/api/deployments/${prod.id}`)).body.data.current, false);
    // No build: the same build output, no build log lines but the promotion's.
    const rows = await ps.server.ctx.db.selectFrom('deploymentBuilds').select(['deploymentId', 'releaseDir']).where('deploymentId', 'in', [promoted.id, candidate.id]).execute();
    assert.equal(rows.length, 2);
    assert.equal(rows[0]!.releaseDir, rows[1]!.releaseDir);
    const log = await buildLog(promoted.id);
    assert.deepEqual(log, [`[berth] promoted ${candidate.id} of next to production as ${promoted.id} (no build: its build output runs with production's variables)`]);
    assert.deepEqual(await buildLog(candidate.id), candidateLog);
    const audit = (await ps.api.get('/api/audit?limit=50')).body.data.filter((e: any) => e.action === 'deployment.promote');
    assert.equal(audit.length, 1);
    assert.equal(audit[0].resourceId, promoted.id);
    // It is a production release like any other: rollback goes back to the one before it.
    const rb = await ps.api.post(`/api/projects/${project.id}/rollback`);
    assert.equal(rb.status, 202, rb.text);
    assert.equal(rb.body.data.id, prod.id);
    assert.match((await edge(prodHost())).text, /^hello promote-v1/);
  });

  test('promote refuses what it cannot promote: 400 naming the field, 404 for an unknown environment', async () => {
    const url = (env: string) => `/api/projects/${project.id}/environments/${env}/promote`;
    assertError(await ps.api.post(url('production')), 400, 'VALIDATION_FAILED', 'env');
    assertError(await ps.api.post(url('nope')), 404, 'NOT_FOUND', 'env');
    assertError(await ps.api.post(url('next'), { deploymentId: prod.id }), 400, 'VALIDATION_FAILED', 'deploymentId');
    assertError(await ps.api.post(url('next'), { deploymentId: 'dpl_unknown000000000000' }), 400, 'VALIDATION_FAILED', 'deploymentId');
    const failed = await createDeployment(ps.server, project, { environment: 'next', status: 'failed' });
    assertError(await ps.api.post(url('next'), { deploymentId: failed }), 400, 'VALIDATION_FAILED', 'deploymentId');
    // A ready deployment whose build output is gone (pruned).
    const pruned = await createDeployment(ps.server, project, { environment: 'next', status: 'ready', current: false });
    const r = await ps.api.post(url('next'), { deploymentId: pruned });
    assertError(r, 400, 'VALIDATION_FAILED', 'deploymentId');
    assert.match(r.body.error.message, /was pruned/);
    const empty = await ps.api.post(`/api/projects/${project.id}/environments`, { name: 'empty' });
    assert.equal(empty.status, 201, empty.text);
    assertError(await ps.api.post(url('empty')), 400, 'VALIDATION_FAILED', 'deploymentId');
    // Another org's project is not found.
    const other = await createUser(ps.server);
    assertError(await ps.server.api(other.token).post(url('next')), 404, 'NOT_FOUND');
  });
});
