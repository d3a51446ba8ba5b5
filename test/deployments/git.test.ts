import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitForDeployment } from '../support/wait.js';
import { edgeRequest, type EdgeAnswer } from '../support/http.js';

let root: string;
let server: TestServer;
let owner: TestUser;
let projectId: string;
let slug: string;
const commits: string[] = [];
const TOKEN = 'ghp_cloneTokenValue1234567890';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e.test', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e.test' } }).toString().trim();
}

function edge(host: string): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(server.ctx).edgePort(), host);
}

before(async () => {
  root = tempDir('berth-git-');
  // A git host on the file system: <root>/git/<owner>/<repo>.git, named by BERTH_GITHUB_WEB_URL.
  const work = path.join(root, 'work');
  writeTinyApp(work, { version: 'git-v1' });
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'one');
  commits.push(git(work, 'rev-parse', 'HEAD'));
  writeTinyApp(work, { version: 'git-v2' });
  git(work, 'commit', '-q', '-am', 'two');
  commits.push(git(work, 'rev-parse', 'HEAD'));
  mkdirSync(path.join(root, 'git', 'acme'), { recursive: true });
  git(root, 'clone', '-q', '--bare', work, path.join(root, 'git', 'acme', 'tiny.git'));
  server = await startTestServer({ background: true, env: { BERTH_GITHUB_WEB_URL: `file://${path.join(root, 'git')}` } });
  owner = await createUser(server);
  const api = server.api(owner.token);
  const p = await api.post('/api/projects', { name: 'Git Tiny', gitOwner: 'acme', gitRepo: 'tiny', gitBranch: 'main', gitProvider: 'github' });
  assert.equal(p.status, 201, p.text);
  projectId = p.body.data.id;
  slug = p.body.data.slug;
  const cred = await api.patch(`/api/projects/${projectId}/clone-token`, { token: TOKEN, username: 'bot' });
  assert.equal(cred.status, 200, cred.text);
});

after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

async function deployAndWait(body: Record<string, unknown>) {
  const api = server.api(owner.token);
  const res = await api.post('/api/deployments', { projectId, ...body });
  assert.equal(res.status, 202, res.text);
  return waitForDeployment(api, res.body.data.id, 30000);
}

test('a git deployment fetches the deploy branch, records the commit, and never logs the clone credential', async () => {
  const d = await deployAndWait({});
  assert.equal(d.status, 'ready', d.error);
  assert.equal(d.ref, 'main');
  assert.equal(d.commit, commits[1]);
  assert.match((await edge(`${slug}.localhost`)).text, /^hello git-v2/);
  const logs = await server.api(owner.token).get(`/api/deployments/${d.id}/logs`);
  const text = JSON.stringify(logs.body);
  assert.ok(!text.includes(TOKEN));
  assert.match(text, /fetching file:\/\/.*acme\/tiny\.git at main/);
  const info = await server.api(owner.token).get(`/api/projects/${projectId}/info`);
  assert.equal(info.body.data.build.commit, commits[1]);
});

test('a git deployment at an older commit ref builds that commit', async () => {
  const d = await deployAndWait({ ref: commits[0] });
  assert.equal(d.status, 'ready', d.error);
  assert.equal(d.commit, commits[0]);
  assert.match((await edge(`${slug}.localhost`)).text, /^hello git-v1/);
});

test('a missing ref fails the deployment with a clear error and keeps the release serving', async () => {
  const d = await deployAndWait({ ref: 'no-such-branch' });
  assert.equal(d.status, 'failed');
  assert.match(d.error, /git/);
  assert.match((await edge(`${slug}.localhost`)).text, /^hello git-v1/);
});

test('bad deployment bodies are 4xx naming the field', async () => {
  const api = server.api(owner.token);
  const r1 = await api.post('/api/deployments', {});
  assert.equal(r1.status, 400);
  assert.equal(r1.body.error.field, 'projectId');
  const r2 = await api.post('/api/deployments', { projectId: 'prj_nope' });
  assert.equal(r2.status, 404);
  const r3 = await api.post('/api/deployments', { projectId, environment: 'staging' });
  assert.equal(r3.status, 400);
  assert.equal(r3.body.error.field, 'environment');
  const r4 = await api.post('/api/deployments', { projectId, ref: 'bad ref with spaces' });
  assert.equal(r4.status, 400);
  assert.equal(r4.body.error.field, 'ref');
  const r6 = await api.post('/api/deployments', { projectId, ref: '--upload-pack=touch /tmp/pwned' });
  assert.equal(r6.status, 400);
  assert.equal(r6.body.error.field, 'ref');
  const r5 = await api.post('/api/deployments', { projectId: 42 });
  assert.equal(r5.status, 400);
  // another org's deployment is 404
  const other = await createUser(server);
  const list = await api.get(`/api/projects/${projectId}/deployments`);
  const theirs = server.api(other.token);
  assert.equal((await theirs.get(`/api/deployments/${list.body.data[0].id}`)).status, 404);
  assert.equal((await theirs.post('/api/deployments', { projectId })).status, 404);
  assert.equal((await theirs.post('/api/deployments/build/access', { deploymentId: list.body.data[0].id })).status, 404);
});
