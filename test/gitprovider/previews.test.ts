/**
 * Preview deployments on GitHub (contract section 16, issue 22), end to end: signed `pull_request` and
 * `push` deliveries from the fake GitHub reach a real server with its jobs worker, which deploys the
 * `pr-<number>` environment from the fake's git repository, reports the `berth/deploy` commit status
 * and keeps one pull request comment at the fake (which records every call), and serves the preview
 * through the edge.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { projectQueries } from '../../src/modules/projects/index.js';
import { setAutoDeploy } from '../../src/modules/projects/git.service.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { actorOf, createProject, type TestOrg } from '../support/factories.js';
import type { FakePull } from '../support/fake-github.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { installApp, startGitWorld, tokenTeam, uniqueLogin, WEBHOOK_SECRET, type GitWorld } from './setup.js';

function tinyAppFiles(version: string, extra: Record<string, unknown> = {}): Record<string, string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tiny-'));
  try {
    writeTinyApp(dir, { version, extraPackageJson: extra });
    return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const CONTEXT = 'berth/deploy';

describe('preview deployments from GitHub pull requests', () => {
  let w: GitWorld;
  let hookUrl: string;
  const TEMPLATES = 'preview-templates';

  before(async () => {
    w = await startGitWorld({ server: { background: true } });
    hookUrl = `${w.server.url}/api/gitprovider/webhook`;
    w.fake.createRepo(TEMPLATES, 'shop', { files: tinyAppFiles('main-v1') });
  });
  after(() => w.close());

  interface World {
    team: TestOrg;
    owner: string;
    installationId: number;
    projectId: string;
    api: HttpClient;
  }

  /** A team whose org has the App on a GitHub organization of its own, and an auto-deploy project linked to its `shop`. */
  async function connected(): Promise<World> {
    const team = await tokenTeam(w.server);
    const owner = uniqueLogin('pr');
    w.fake.account(owner, 'Organization');
    w.fake.copyRepo(TEMPLATES, 'shop', owner);
    const installationId = await installApp(w, w.server.api(team.owner.token), owner);
    const p = await createProject(w.server, team.member, { name: 'shop', gitOwner: owner, gitRepo: 'shop', gitBranch: 'main' });
    const row = await projectQueries.findProject(w.server.ctx.db, team.orgId, p.id);
    await setAutoDeploy(w.server.ctx, actorOf(team.member), row!, true);
    return { team, owner, installationId, projectId: p.id, api: w.server.api(team.member.token) };
  }

  async function deliveryDone(deliveryId: string): Promise<any> {
    const row = await waitFor(
      async () => {
        const r = await w.server.ctx.db.selectFrom('gitproviderDeliveries').selectAll().where('deliveryId', '=', deliveryId).executeTakeFirst();
        return r && r.status !== 'queued' ? r : null;
      },
      `delivery ${deliveryId}`,
      20000,
    );
    assert.equal(row.status, 'done', String(row.result));
    return JSON.parse(row.result ?? 'null');
  }

  async function sendPull(x: World, pull: FakePull, action: 'opened' | 'synchronize' | 'reopened' | 'closed', deliveryId?: string): Promise<any> {
    const res = await w.fake.deliverPullRequest(hookUrl, WEBHOOK_SECRET, x.owner, 'shop', pull.number, action, { installationId: x.installationId, deliveryId });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return deliveryDone(res.deliveryId);
  }

  async function sendPush(x: World, branch: string): Promise<any> {
    const res = await w.fake.deliver(hookUrl, 'push', w.fake.pushPayload(x.owner, 'shop', { branch, installationId: x.installationId }), { secret: WEBHOOK_SECRET });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return deliveryDone(res.deliveryId);
  }

  async function deploymentsOf(x: World, environment: string): Promise<any[]> {
    const l = await x.api.get(`/api/projects/${x.projectId}/deployments`);
    assert.equal(l.status, 200, l.text);
    return l.body.data.filter((d: any) => d.environment === environment);
  }

  /** The one deployment of `environment` at `commit`, once it settled. */
  async function settled(x: World, environment: string, commit: string): Promise<any> {
    const d = await waitFor(async () => (await deploymentsOf(x, environment)).find((d) => d.commit === commit || d.ref === commit), `a deployment of ${environment} at ${commit}`, 20000);
    return waitForDeployment(x.api, d.id, 90000);
  }

  async function environment(x: World, name: string): Promise<any | undefined> {
    const r = await x.api.get(`/api/projects/${x.projectId}/environments`);
    assert.equal(r.status, 200, r.text);
    return r.body.data.find((e: any) => e.name === name);
  }

  /** The statuses of `sha` once the last one is `state`. */
  function statusesUntil(sha: string, state: string) {
    return waitFor(() => {
      const s = w.fake.statusesOf(sha, CONTEXT);
      if (s.length && s.at(-1)!.state === state) return s;
      throw new Error(`statuses so far: ${JSON.stringify(s.map((x) => x.state))}`);
    }, `the ${state} status of ${sha.slice(0, 7)}`, 20000);
  }

  function commentsUntil(x: World, pull: FakePull, has: RegExp) {
    return waitFor(() => {
      const c = w.fake.commentsOn(x.owner, 'shop', pull.number);
      if (c.length && has.test(c.at(-1)!.body)) return c;
      throw new Error(`comments so far: ${JSON.stringify(c.map((x) => x.body))}`);
    }, `the comment to match ${has}`, 20000);
  }

  const page = (x: World, deploymentId: string) => `${w.server.ctx.publicUrl()}/projects/${x.projectId}/deployments/${deploymentId}`;
  const edge = (url: string) => edgeRequest(getRuntime(w.server.ctx).edgePort(), new URL(url).hostname);

  /**
   * A pull request of its own (head `feature/login` at the tiny app `feature-v1`), opened and its
   * preview `pr-<number>` deployed and ready, its status and comment written: the start each case of a
   * pull request's life below makes for itself.
   */
  async function openedPull(): Promise<{ x: World; pull: FakePull; name: string; env: any; first: string }> {
    const x = await connected();
    const first = w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v1'), { branch: 'feature/login' });
    const pull = w.fake.openPull(x.owner, 'shop', { head: 'feature/login' });
    const name = `pr-${pull.number}`;
    await sendPull(x, pull, 'opened');
    const d = await settled(x, name, first);
    assert.equal(d.status, 'ready', d.error ?? '');
    await statusesUntil(first, 'success');
    await commentsUntil(x, pull, /\| Ready \|/);
    return { x, pull, name, env: await environment(x, name), first };
  }
  /** The comments Berth created on `pull` of `x`'s repository. */
  const created = (x: World, pull: FakePull) => w.fake.commentWrites.filter((c) => c.op === 'create' && c.owner === x.owner && c.number === pull.number);

  describe('one pull request from open to close, each step a case of its own', () => {
    it('opened: creates pr-<number> for the head branch and deploys its head; the status goes pending (the deployment page) then success (the preview URL); one comment; the preview answers through the edge', async () => {
      const x = await connected();
      const head = w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v1'), { branch: 'feature/login' });
      const pull = w.fake.openPull(x.owner, 'shop', { head: 'feature/login' });
      const result = await sendPull(x, pull, 'opened');
      const name = `pr-${pull.number}`;
      assert.equal(result.previews.length, 1);
      assert.equal(result.previews[0].environment, name);
      const env = await environment(x, name);
      assert.ok(env, 'the environment exists');
      assert.equal(env.type, 'preview');
      assert.equal(env.branch, 'feature/login');
      const d = await settled(x, name, head);
      assert.equal(d.status, 'ready', d.error ?? '');
      assert.equal(d.trigger, 'push');
      assert.equal(d.ref, 'feature/login');
      assert.equal(d.commit, head);
      const statuses = await statusesUntil(head, 'success');
      assert.equal(statuses[0]!.state, 'pending');
      assert.equal(statuses[0]!.target_url, page(x, d.id));
      assert.equal(statuses.at(-1)!.target_url, env.url);
      assert.ok(statuses.every((s) => s.auth === 'installation' && s.owner === x.owner && s.repo === 'shop'));
      const comments = await commentsUntil(x, pull, /\| Ready \|/);
      assert.equal(comments.length, 1);
      const body = comments[0]!.body;
      assert.ok(body.includes(head.slice(0, 7)));
      assert.ok(body.includes(new URL(env.url).host));
      assert.ok(body.includes(`(${page(x, d.id)})`));
      assert.equal(created(x, pull).length, 1);
      const res = await edge(env.url);
      assert.equal(res.status, 200);
      assert.match(res.text, /^hello feature-v1/);
      // Production was not deployed by the pull request.
      assert.equal((await deploymentsOf(x, 'production')).length, 0);
    });

    it('synchronize with a new head deploys it and edits the same comment; its push, a second delivery of the same head and a redelivery deploy nothing more', async () => {
      const { x, pull, name, env } = await openedPull();
      const head = w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v2'), { branch: 'feature/login' });
      const res = await w.fake.deliverPullRequest(hookUrl, WEBHOOK_SECRET, x.owner, 'shop', pull.number, 'synchronize', { installationId: x.installationId });
      assert.equal(res.status, 202);
      // GitHub sends the push of the same head too, and may send the synchronize again under another id:
      // that one is acknowledged and not queued (the same pull request, action and head within the hour).
      await sendPush(x, 'feature/login');
      const second = await w.fake.deliverPullRequest(hookUrl, WEBHOOK_SECRET, x.owner, 'shop', pull.number, 'synchronize', { installationId: x.installationId });
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body.data.duplicate, true);
      await deliveryDone(res.deliveryId);
      const again = await w.fake.deliverPullRequest(hookUrl, WEBHOOK_SECRET, x.owner, 'shop', pull.number, 'synchronize', { installationId: x.installationId, deliveryId: res.deliveryId });
      assert.equal(again.status, 200);
      assert.equal(again.body.data.duplicate, true);
      const d = await settled(x, name, head);
      assert.equal(d.status, 'ready', d.error ?? '');
      assert.equal((await deploymentsOf(x, name)).filter((x) => x.commit === head).length, 1, 'one deployment of the new head');
      assert.equal((await deploymentsOf(x, name)).length, 2);
      await statusesUntil(head, 'success');
      assert.equal(w.fake.statusesOf(head, CONTEXT).filter((s) => s.state === 'success').length, 1);
      const comments = await commentsUntil(x, pull, new RegExp(`${head.slice(0, 7)}.*\\| Ready \\|`));
      assert.equal(comments.length, 1, 'the same comment');
      assert.ok(comments[0]!.edits >= 1);
      assert.equal(created(x, pull).length, 1);
      assert.match((await edge(env.url)).text, /^hello feature-v2/);
    });

    it('a push to the pull request\'s branch deploys the preview, and a GitHub failure on the status or the comment is retried without touching the deployment', async () => {
      const { x, pull, name, env } = await openedPull();
      const head = w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v3'), { branch: 'feature/login' });
      w.fake.failNext('POST', new RegExp(`/statuses/${head}$`), 502, 1);
      w.fake.failNext('PATCH', /\/issues\/comments\/\d+$/, 502, 1);
      const result = await sendPush(x, 'feature/login');
      assert.equal(result.deployments.length, 1);
      const d = await settled(x, name, head);
      assert.equal(d.status, 'ready', d.error ?? '');
      assert.equal(d.trigger, 'push');
      const statuses = await statusesUntil(head, 'success');
      assert.equal(statuses.at(-1)!.target_url, env.url);
      await commentsUntil(x, pull, new RegExp(`${head.slice(0, 7)}.*\\| Ready \\|`));
      assert.equal(w.fake.commentsOn(x.owner, 'shop', pull.number).length, 1);
      assert.equal(w.fake.failuresLeft(), 0, 'both injected failures were met');
      assert.match((await edge(env.url)).text, /^hello feature-v3/);
    });

    it('a fast-forward of production\'s branch to the previewed commit still deploys production', async () => {
      const { x, first } = await openedPull();
      w.fake.setBranch(x.owner, 'shop', 'main', first);
      const result = await sendPush(x, 'main');
      assert.equal(result.deployments.length, 1);
      const d = await settled(x, 'production', first);
      assert.equal(d.status, 'ready', d.error ?? '');
      // Production deployments report no commit status: only previews do.
      assert.deepEqual(w.fake.statusesOf(first, CONTEXT).map((s) => s.target_url).filter((u) => u?.includes(d.id)), []);
    });

    it('a head whose build fails posts failure with a short reason (never the log) to the deployment page, and the comment says so', async () => {
      const { x, pull, name, env } = await openedPull();
      const head = w.fake.push(x.owner, 'shop', tinyAppFiles('broken', { scripts: { build: 'echo BUILD-LOG-LINE-42 && exit 3', start: 'node server.js' } }), { branch: 'feature/login' });
      await sendPull(x, pull, 'synchronize');
      const d = await settled(x, name, head);
      assert.equal(d.status, 'failed');
      const statuses = await statusesUntil(head, 'failure');
      const failure = statuses.at(-1)!;
      assert.equal(failure.target_url, page(x, d.id));
      assert.ok(failure.description && failure.description.length <= 140);
      assert.ok(!failure.description!.includes('BUILD-LOG-LINE-42'));
      const comments = await commentsUntil(x, pull, new RegExp(`${head.slice(0, 7)}.*\\| Failed`));
      assert.equal(comments.length, 1);
      assert.ok(!comments[0]!.body.includes('BUILD-LOG-LINE-42'));
      // The last good release keeps serving the preview.
      assert.match((await edge(env.url)).text, /^hello feature-v1/);
    });

    it('closed: removes the environment and its deployments, and edits the comment to say so', async () => {
      const { x, pull, name, env } = await openedPull();
      const result = await sendPull(x, pull, 'closed');
      assert.deepEqual(result.removed, [{ projectId: x.projectId, environment: name }]);
      assert.equal(await environment(x, name), undefined);
      assert.equal((await deploymentsOf(x, name)).length, 0);
      const comments = await commentsUntil(x, pull, /\| Removed \|/);
      assert.equal(comments.length, 1);
      assert.match(comments[0]!.body, /pull request was closed/);
      assert.notEqual((await edge(env.url)).text.startsWith('hello'), true);
      // A push to the branch no longer deploys anything.
      w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v5'), { branch: 'feature/login' });
      assert.deepEqual((await sendPush(x, 'feature/login')).deployments, []);
    });

    it('reopened: the preview is created and deployed again', async () => {
      const { x, pull, name } = await openedPull();
      await sendPull(x, pull, 'closed');
      assert.equal(await environment(x, name), undefined);
      // The branch moved on while the pull request was closed.
      const head = w.fake.push(x.owner, 'shop', tinyAppFiles('feature-v5'), { branch: 'feature/login' });
      await sendPull(x, pull, 'reopened');
      assert.ok(await environment(x, name));
      const d = await settled(x, name, head);
      assert.equal(d.status, 'ready', d.error ?? '');
      await commentsUntil(x, pull, new RegExp(`${head.slice(0, 7)}.*\\| Ready \\|`));
      assert.equal(w.fake.commentsOn(x.owner, 'shop', pull.number).length, 1);
      assert.match((await edge((await environment(x, name)).url)).text, /^hello feature-v5/);
    });
  });

  it('a push to the branch of a preview environment a member made deploys it, with its commit status and no comment', async () => {
    const x = await connected();
    const made = await x.api.post(`/api/projects/${x.projectId}/environments`, { name: 'staging', branch: 'develop' });
    assert.equal(made.status, 201, made.text);
    const sha = w.fake.push(x.owner, 'shop', tinyAppFiles('staging-v1'), { branch: 'develop' });
    const result = await sendPush(x, 'develop');
    assert.equal(result.deployments.length, 1);
    const d = await settled(x, 'staging', sha);
    assert.equal(d.status, 'ready', d.error ?? '');
    assert.equal(d.ref, 'develop');
    const statuses = await statusesUntil(sha, 'success');
    assert.equal(statuses[0]!.state, 'pending');
    assert.equal(statuses.at(-1)!.target_url, made.body.data.url);
    assert.match((await edge(made.body.data.url)).text, /^hello staging-v1/);
    assert.equal((await deploymentsOf(x, 'production')).length, 0);
    assert.equal([...w.fake.comments.values()].filter((c) => c.owner === x.owner).length, 0);
  });

  it('a pull request from a fork is not deployed: no environment, no deployment, nothing written at GitHub', async () => {
    const x = await connected();
    const forker = uniqueLogin('fork');
    w.fake.copyRepo(x.owner, 'shop', forker);
    const sha = w.fake.push(forker, 'shop', tinyAppFiles('from-a-fork'), { branch: 'patch-1' });
    const pull = w.fake.openPull(x.owner, 'shop', { head: 'patch-1', fork: { owner: forker } });
    const result = await sendPull(x, pull, 'opened');
    assert.equal(result.skipped, 'fork');
    assert.deepEqual(result.projects, [x.projectId]);
    assert.equal(await environment(x, `pr-${pull.number}`), undefined);
    assert.equal((await x.api.get(`/api/projects/${x.projectId}/deployments`)).body.data.length, 0);
    assert.equal(w.fake.statusesOf(sha).length, 0);
    assert.equal(w.fake.commentsOn(x.owner, 'shop', pull.number).length, 0);
  });

  it('an unsigned or wrongly signed pull_request delivery is refused (401) and creates nothing', async () => {
    const x = await connected();
    w.fake.push(x.owner, 'shop', { 'a.txt': 'a' }, { branch: 'unsigned' });
    const pull = w.fake.openPull(x.owner, 'shop', { head: 'unsigned' });
    const payload = w.fake.pullRequestPayload(x.owner, 'shop', pull.number, 'opened', { installationId: x.installationId });
    const none = await w.fake.deliver(hookUrl, 'pull_request', payload, {});
    assert.equal(none.status, 401);
    const wrong = await w.fake.deliver(hookUrl, 'pull_request', payload, { secret: 'not the secret' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'UNAUTHENTICATED');
    const resigned = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(JSON.stringify({ ...payload, number: pull.number + 1 })).digest('hex')}`;
    assert.equal((await w.fake.deliver(hookUrl, 'pull_request', payload, { signature: resigned })).status, 401);
    for (const id of [none.deliveryId, wrong.deliveryId]) {
      assert.equal(await w.server.ctx.db.selectFrom('gitproviderDeliveries').select('deliveryId').where('deliveryId', '=', id).executeTakeFirst(), undefined);
    }
    assert.equal(await environment(x, `pr-${pull.number}`), undefined);
  });

  it('other pull request actions (edited, labeled) are acknowledged and do nothing', async () => {
    const x = await connected();
    w.fake.push(x.owner, 'shop', { 'b.txt': 'b' }, { branch: 'labels' });
    const pull = w.fake.openPull(x.owner, 'shop', { head: 'labels' });
    for (const action of ['edited', 'labeled'] as const) {
      const res = await w.fake.deliverPullRequest(hookUrl, WEBHOOK_SECRET, x.owner, 'shop', pull.number, action, { installationId: x.installationId });
      assert.equal(res.status, 202);
      assert.equal((await deliveryDone(res.deliveryId)).ignored, true);
    }
    assert.equal(await environment(x, `pr-${pull.number}`), undefined);
  });
});
