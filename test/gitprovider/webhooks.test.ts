import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { verifySignature } from '../../src/modules/gitprovider/deliveries.service.js';
import { projectQueries } from '../../src/modules/projects/index.js';
import { setAutoDeploy } from '../../src/modules/projects/git.service.js';
import { actorOf, createProject, type TestOrg } from '../support/factories.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { installApp, startGitWorld, tokenTeam, uniqueLogin, WEBHOOK_SECRET, type GitWorld } from './setup.js';

function tinyAppFiles(version: string): Record<string, string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tiny-'));
  try {
    writeTinyApp(dir, { version });
    return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('GitHub webhook signatures', () => {
  it("GitHub's own test vector verifies; anything else does not; no secret fails closed", () => {
    const raw = Buffer.from('Hello, World!');
    const good = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    assert.equal(verifySignature(WEBHOOK_SECRET, raw, good), true);
    assert.equal(verifySignature(WEBHOOK_SECRET, Buffer.from('Hello, World?'), good), false);
    assert.equal(verifySignature(WEBHOOK_SECRET, raw, good.replace('sha256=', 'sha1=')), false);
    assert.equal(verifySignature(WEBHOOK_SECRET, raw, good.slice(0, -1)), false);
    assert.equal(verifySignature(WEBHOOK_SECRET, raw, undefined), false);
    assert.equal(verifySignature(undefined, raw, good), false);
    assert.equal(verifySignature('', raw, good), false);
  });
});

describe('incoming GitHub deliveries, auto-deploy and the project git routes', () => {
  // One server (with its jobs worker) and one fake GitHub for the suite; every test that needs a
  // connection makes its own team, its own GitHub organization (a fresh login) and installation,
  // and its own projects.
  let w: GitWorld;
  let hookUrl: string;

  // Template repositories no installation covers; each test copies them to an account of its own.
  const TEMPLATES = 'berth-templates';

  before(async () => {
    w = await startGitWorld({ server: { background: true } });
    hookUrl = `${w.server.url}/api/gitprovider/webhook`;
    w.fake.createRepo(TEMPLATES, 'shop', { files: tinyAppFiles('v1') });
    w.fake.push(TEMPLATES, 'shop', { 'next.txt': 'n' }, { branch: 'next' });
    w.fake.createRepo(TEMPLATES, 'blog', { files: { 'index.html': '<h1>blog</h1>' } });
  });
  after(() => w.close());

  interface Connected {
    team: TestOrg;
    /** The GitHub organization's login (`acme-xxxxxx`). */
    owner: string;
    installationId: number;
  }

  /**
   * A team of its own whose org has the App installed on a GitHub organization of its own holding
   * copies of the templates: `shop` (the tiny app `v1` on main, and a `next` branch) and `blog`.
   */
  async function connectedTeam(): Promise<Connected> {
    const team = await tokenTeam(w.server);
    const owner = uniqueLogin('acme');
    w.fake.account(owner, 'Organization');
    w.fake.copyRepo(TEMPLATES, 'shop', owner);
    w.fake.copyRepo(TEMPLATES, 'blog', owner);
    const installationId = await installApp(w, w.server.api(team.owner.token), owner);
    return { team, owner, installationId };
  }

  /**
   * A project of the team linked to `<owner>/<repo>` on main, made through the projects service as the
   * member; with `autoDeploy` (the default) turned on through the service too, which registers the
   * repository's push webhook at the fake GitHub.
   */
  async function linkedProject(c: Connected, repo = 'shop', opts: { autoDeploy?: boolean } = {}): Promise<string> {
    const p = await createProject(w.server, c.team.member, { name: repo, gitOwner: c.owner, gitRepo: repo, gitBranch: 'main' });
    if (opts.autoDeploy !== false) {
      const row = await projectQueries.findProject(w.server.ctx.db, c.team.orgId, p.id);
      await setAutoDeploy(w.server.ctx, actorOf(c.team.member), row!, true);
    }
    return p.id;
  }

  it('the webhook route verifies the raw bytes: the exact bytes GitHub signed pass, a re-serialised body or a wrong or missing signature is 401', async () => {
    // Whitespace and key order that JSON.stringify would not reproduce.
    const raw = '{"zen":"Keep it logically awesome.",  "hook_id": 1,\n "b":1, "a":2}';
    const sig = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(raw).digest('hex')}`;
    const send = (body: string, signature?: string) =>
      fetch(hookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-github-delivery': crypto.randomUUID(), ...(signature ? { 'x-hub-signature-256': signature } : {}) },
        body,
      });
    assert.equal((await send(raw, sig)).status, 200);
    assert.equal((await send(JSON.stringify(JSON.parse(raw)), sig)).status, 401);
    const wrong = await send(raw, `sha256=${'0'.repeat(64)}`);
    assert.equal(wrong.status, 401);
    assert.equal(((await wrong.json()) as any).error.code, 'UNAUTHENTICATED');
    assert.equal((await send(raw)).status, 401);
    assert.equal((await send(raw, sig.replace('sha256=', ''))).status, 401);
  });

  it('the project routes work through the provider: git/link takes the default branch, branches, git info, commit-status', async () => {
    const c = await connectedTeam();
    const api = w.server.api(c.team.member.token);
    const p = await api.post('/api/projects', { name: 'Shop' });
    assert.equal(p.status, 201, p.text);
    const projectId = p.body.data.id;
    const noOwner = await api.post(`/api/projects/${projectId}/git/link`, { repo: 'shop' });
    assert.equal(noOwner.status, 400);
    assert.equal(noOwner.body.error.field, 'owner');
    const missing = await api.post(`/api/projects/${projectId}/git/link`, { owner: c.owner, repo: 'nope' });
    assert.equal(missing.status, 404);
    const link = await api.post(`/api/projects/${projectId}/git/link`, { owner: c.owner, repo: 'shop' });
    assert.equal(link.status, 200, link.text);
    assert.equal(link.body.data.source.gitBranch, 'main');
    const br = await api.get(`/api/projects/${projectId}/branches`);
    assert.equal(br.status, 200);
    assert.deepEqual(br.body.data.map((b: any) => b.name).sort(), ['main', 'next']);
    const git = await api.get(`/api/projects/${projectId}/git`);
    assert.equal(git.status, 200);
    assert.equal(git.body.data.repository.fullName, `${c.owner}/shop`);
    assert.equal(git.body.data.repository.cloneUrl, `${w.fake.url}/${c.owner}/shop.git`);
    const cs = await api.get(`/api/projects/${projectId}/commit-status`);
    assert.equal(cs.status, 200);
    assert.deepEqual(cs.body.data, { branch: 'main', deployedCommit: null, remoteCommit: w.fake.headOf(c.owner, 'shop'), upToDate: false });
  });

  it('turning auto-deploy on registers the push webhook at GitHub (JSON, our secret, push), and turning it on again reuses it', async () => {
    const c = await connectedTeam();
    const projectId = await linkedProject(c, 'shop', { autoDeploy: false });
    assert.equal(w.fake.repo(c.owner, 'shop')!.hooks.length, 0);
    const api = w.server.api(c.team.member.token);
    const r = await api.post(`/api/projects/${projectId}/auto-deploy`, { enabled: true });
    assert.equal(r.status, 200, r.text);
    const hooks = w.fake.repo(c.owner, 'shop')!.hooks;
    assert.equal(hooks.length, 1);
    assert.equal(hooks[0]!.config.url, hookUrl.replace(w.server.url, w.server.ctx.publicUrl()));
    assert.equal(hooks[0]!.config.content_type, 'json');
    assert.equal(hooks[0]!.config.secret, WEBHOOK_SECRET);
    assert.deepEqual(hooks[0]!.events, ['push']);
    assert.equal(String(r.body.data.webhookId), String(hooks[0]!.id));
    // again: reused, not duplicated
    assert.equal((await api.post(`/api/projects/${projectId}/auto-deploy`, { enabled: true })).status, 200);
    assert.equal(w.fake.repo(c.owner, 'shop')!.hooks.length, 1);
  });

  it('a push to the deploy branch answers at once, creates one push deployment of the pushed commit, which clones from GitHub with a fresh clone token and deploys; a repeated delivery is not acted on twice', async () => {
    const c = await connectedTeam();
    const projectId = await linkedProject(c);
    const api = w.server.api(c.team.member.token);
    const sha = w.fake.push(c.owner, 'shop', tinyAppFiles('v2'));
    const mintedBefore = w.fake.minted.get(c.installationId) ?? 0;
    const payload = w.fake.pushPayload(c.owner, 'shop', { installationId: c.installationId });
    const t0 = Date.now();
    const first = await w.fake.deliver(hookUrl, 'push', payload, { secret: WEBHOOK_SECRET, deliveryId: 'd-push-1', hookId: w.fake.repo(c.owner, 'shop')!.hooks[0]!.id });
    assert.ok(Date.now() - t0 < 1000, 'answered in under a second');
    assert.equal(first.status, 202);
    const dep = await waitFor(async () => {
      const l = await api.get(`/api/projects/${projectId}/deployments`);
      return l.body.data.find((d: any) => d.trigger === 'push');
    }, 'the push deployment', 15000, 50);
    assert.equal(dep.commit, sha);
    assert.equal(dep.ref, 'main');
    const again = await w.fake.deliver(hookUrl, 'push', payload, { secret: WEBHOOK_SECRET, deliveryId: 'd-push-1' });
    assert.equal(again.status, 200);
    assert.equal(again.body.data.duplicate, true);
    // The same signed body under a new delivery id (another hook, the App's, or a replay) within the hour
    // is acknowledged and not queued again (issue 33).
    const replay = await w.fake.deliver(hookUrl, 'push', payload, { secret: WEBHOOK_SECRET, deliveryId: 'd-push-1-app' });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.data.duplicate, true);
    assert.equal(await w.server.ctx.db.selectFrom('gitproviderDeliveries').select('status').where('deliveryId', '=', 'd-push-1-app').executeTakeFirst(), undefined);
    const done = await waitForDeployment(api, dep.id);
    assert.equal(done.status, 'ready', done.error ?? '');
    assert.equal(done.commit, sha);
    const pushes = (await api.get(`/api/projects/${projectId}/deployments`)).body.data.filter((d: any) => d.trigger === 'push');
    assert.equal(pushes.length, 1);
    // Cloned from the fake over smart HTTP with a freshly minted installation token.
    assert.ok((w.fake.minted.get(c.installationId) ?? 0) > mintedBefore);
    assert.ok(w.fake.gitRequests.some((g) => g.ok && g.path === `/${c.owner}/shop.git/info/refs`));
    const logs = await api.get(`/api/deployments/${dep.id}/logs`);
    assert.ok(!/ghs_/.test(logs.text));
    const cs = await api.get(`/api/projects/${projectId}/commit-status`);
    assert.deepEqual(cs.body.data, { branch: 'main', deployedCommit: sha, remoteCommit: sha, upToDate: true });
  });

  it('a delivery whose processing failed for good is marked failed, and GitHub\'s redelivery of the same id runs it again', async () => {
    const c = await connectedTeam();
    await linkedProject(c);
    const payload = w.fake.pushPayload(c.owner, 'shop', { installationId: c.installationId });
    payload.ref = 'refs/heads/not-the-deploy-branch';
    const opts = { secret: WEBHOOK_SECRET, deliveryId: 'd-redeliver-1' };
    assert.equal((await w.fake.deliver(hookUrl, 'push', payload, opts)).status, 202);
    const row = () => w.server.ctx.db.selectFrom('gitproviderDeliveries').selectAll().where('deliveryId', '=', 'd-redeliver-1').executeTakeFirstOrThrow();
    await waitFor(async () => (await row()).status === 'done', 'the first processing', 10000, 50);
    // Its last attempt fails (a stored body that cannot be read stands in for any failure).
    await w.server.ctx.db.updateTable('gitproviderDeliveries').set({ status: 'queued', payload: 'not json' }).where('deliveryId', '=', 'd-redeliver-1').execute();
    const { processDelivery } = await import('../../src/modules/gitprovider/deliveries.service.js');
    await assert.rejects(processDelivery(w.server.ctx, 'd-redeliver-1', { attempts: 4, maxAttempts: 5 }));
    assert.equal((await row()).status, 'queued', 'not the last attempt: still queued');
    await assert.rejects(processDelivery(w.server.ctx, 'd-redeliver-1', { attempts: 5, maxAttempts: 5 }));
    assert.equal((await row()).status, 'failed');
    assert.match(String((await row()).result), /error/);
    // Redelivered: queued again with the signed body, and processed.
    const again = await w.fake.deliver(hookUrl, 'push', payload, opts);
    assert.equal(again.status, 202);
    assert.equal(again.body.data.redelivered, true);
    await waitFor(async () => (await row()).status === 'done', 'the redelivery', 10000, 50);
    // Once done, a repeat is a no-op again.
    const third = await w.fake.deliver(hookUrl, 'push', payload, opts);
    assert.equal(third.status, 200);
    assert.equal(third.body.data.duplicate, true);
  });

  it('with auto-deploy on, pushes to other branches, deleted branches and repositories nobody links create nothing', async () => {
    const c = await connectedTeam();
    const projectId = await linkedProject(c);
    const api = w.server.api(c.team.member.token);
    const count = async () => (await api.get(`/api/projects/${projectId}/deployments`)).body.data.length;
    const before = await count();
    w.fake.push(c.owner, 'shop', { 'x.txt': String(Date.now()) }, { branch: 'next' });
    const ids = ['d-next', 'd-deleted', 'd-blog'];
    await w.fake.deliver(hookUrl, 'push', w.fake.pushPayload(c.owner, 'shop', { branch: 'next', installationId: c.installationId }), { secret: WEBHOOK_SECRET, deliveryId: ids[0] });
    await w.fake.deliver(hookUrl, 'push', { ...w.fake.pushPayload(c.owner, 'shop', { installationId: c.installationId }), deleted: true, after: '0'.repeat(40) }, { secret: WEBHOOK_SECRET, deliveryId: ids[1] });
    await w.fake.deliver(hookUrl, 'push', w.fake.pushPayload(c.owner, 'blog', { installationId: c.installationId }), { secret: WEBHOOK_SECRET, deliveryId: ids[2] });
    await waitFor(async () => {
      const rows = await w.server.ctx.db.selectFrom('gitproviderDeliveries').select('status').where('deliveryId', 'in', ids).execute();
      return rows.length === 3 && rows.every((r) => r.status === 'done');
    }, 'the deliveries', 10000, 50);
    assert.equal(await count(), before);
  });

  it('installation_repositories removed unlinks the projects of those repositories and leaves the others linked', async () => {
    const c = await connectedTeam();
    const projectId = await linkedProject(c);
    const api = w.server.api(c.team.member.token);
    const p = (await api.post('/api/projects', { name: 'Blog' })).body.data.id;
    assert.equal((await api.post(`/api/projects/${p}/git/link`, { owner: c.owner, repo: 'blog' })).status, 200);
    const res = await w.fake.deliver(
      hookUrl,
      'installation_repositories',
      { action: 'removed', installation: { id: c.installationId, account: { login: c.owner, type: 'Organization' } }, repositories_removed: [{ id: 1, name: 'blog', full_name: `${c.owner}/blog`, private: true }], repositories_added: [] },
      { secret: WEBHOOK_SECRET },
    );
    assert.equal(res.status, 202);
    const proj = await waitFor(async () => {
      const r = await api.get(`/api/projects/${p}`);
      return r.body.data.source.gitRepo === null ? r.body.data : null;
    }, 'the unlink', 10000, 50);
    assert.equal(proj.source.type, 'none');
    const git = await api.get(`/api/projects/${p}/git`);
    assert.equal(git.body.data.linked, false);
    assert.match(git.body.data.notice.reason, new RegExp(`${c.owner}/blog was removed`));
    // The shop project is untouched.
    assert.equal((await api.get(`/api/projects/${projectId}`)).body.data.source.gitRepo, 'shop');
  });

  it('installation deleted drops the installation and pauses auto-deploy of the affected projects with a visible reason', async () => {
    const c = await connectedTeam();
    const projectId = await linkedProject(c);
    const api = w.server.api(c.team.member.token);
    assert.equal((await api.get(`/api/projects/${projectId}`)).body.data.autoDeploy, true);
    w.fake.uninstall(c.installationId);
    const res = await w.fake.deliver(
      hookUrl,
      'installation',
      { action: 'deleted', installation: { id: c.installationId, account: { login: c.owner, id: 1, type: 'Organization' } }, sender: { login: c.owner } },
      { secret: WEBHOOK_SECRET },
    );
    assert.equal(res.status, 202);
    const proj = await waitFor(async () => {
      const r = await api.get(`/api/projects/${projectId}`);
      return r.body.data.autoDeploy === false ? r.body.data : null;
    }, 'the pause', 10000, 50);
    assert.equal(proj.source.gitRepo, 'shop');
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.body.data.state, 'not_connected');
    // The reason shows on the project's git info, even though GitHub no longer answers for the repository.
    const git = await api.get(`/api/projects/${projectId}/git`);
    assert.equal(git.status, 200, git.text);
    assert.equal(git.body.data.linked, true);
    assert.equal(git.body.data.autoDeploy, false);
    assert.equal(git.body.data.repository, null);
    assert.match(git.body.data.notice.reason, new RegExp(`uninstalled for ${c.owner}`));
    // A push for the repository now creates nothing.
    const before = (await api.get(`/api/projects/${projectId}/deployments`)).body.data.length;
    w.fake.push(c.owner, 'shop', { 'y.txt': 'y' });
    await w.fake.deliver(hookUrl, 'push', w.fake.pushPayload(c.owner, 'shop', { installationId: c.installationId }), { secret: WEBHOOK_SECRET, deliveryId: 'd-after-uninstall' });
    await waitFor(async () => (await w.server.ctx.db.selectFrom('gitproviderDeliveries').select('status').where('deliveryId', '=', 'd-after-uninstall').executeTakeFirst())?.status === 'done', 'the delivery', 10000, 50);
    assert.equal((await api.get(`/api/projects/${projectId}/deployments`)).body.data.length, before);
  });

  it('an installation created at GitHub is recorded unclaimed until an org claims it', async () => {
    const login = uniqueLogin('newco');
    const inst = w.fake.install(login, { type: 'Organization' });
    const res = await w.fake.deliver(hookUrl, 'installation', { action: 'created', installation: { id: inst.id, account: { login, id: inst.account.id, type: 'Organization' } } }, { secret: WEBHOOK_SECRET });
    assert.equal(res.status, 202);
    const row = await waitFor(() => w.server.ctx.db.selectFrom('gitproviderInstallations').selectAll().where('installationId', '=', String(inst.id)).executeTakeFirst(), 'the record', 10000, 50);
    assert.equal(row.orgId, null);
    assert.equal(row.accountLogin, login);
  });

  it('bad deliveries: missing delivery id or event is 400, a non-JSON body is 400, unknown events are acknowledged and ignored', async () => {
    const body = Buffer.from('{"a":1}');
    const sig = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
    const post = (headers: Record<string, string>, b: Buffer = body) => fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': sig, ...headers }, body: new Uint8Array(b) });
    assert.equal((await post({ 'x-github-event': 'push' })).status, 400);
    assert.equal((await post({ 'x-github-delivery': 'x1' })).status, 400);
    const notJson = Buffer.from('not json');
    const r = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': 'x2', 'x-hub-signature-256': `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(notJson).digest('hex')}` }, body: new Uint8Array(notJson) });
    assert.equal(r.status, 400);
    const star = await post({ 'x-github-event': 'star', 'x-github-delivery': 'x3' });
    assert.equal(star.status, 200);
    assert.equal(((await star.json()) as any).data.ignored, true);
  });
});
