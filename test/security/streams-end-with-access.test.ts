/**
 * Security review, issue 15 point 7: an SSE stream was authorized once, when it opened. A member who was
 * removed, demoted, lost a grant, had the token revoked or signed out kept reading the project's runtime
 * logs, request log, build logs and backup progress for as long as the connection lasted. Streams now
 * end when the access that opened them ends: at once for changes made on this instance, and within a
 * bounded time (the periodic re-authorization) for changes made elsewhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { REAUTHORIZE_EVERY_MS } from '../../src/http/stream-access.js';
import { createDestination, createGrant, createPolicy, createProject, createTeam, createToken, type TestOrg } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

/** A bound for waiting on something that should happen at once (no timing is asserted). */
const SOON_MS = 20000;
/** A bound for the periodic re-authorization (REAUTHORIZE_EVERY_MS plus the credential cache's 2 s), with room. */
const PERIODIC_MS = REAUTHORIZE_EVERY_MS + 2000 + 20000;

interface Stream {
  /** Resolves with everything read once the server ends the stream. */
  ended: Promise<string>;
  isOpen(): boolean;
  close(): void;
}

async function openStream(url: string, headers: Record<string, string>): Promise<Stream> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  if (res.status !== 200) throw new Error(`stream ${url}: ${res.status} ${await res.text()}`);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let open = true;
  let markOpen!: () => void;
  const opened = new Promise<void>((r) => (markOpen = r));
  const ended = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (text.includes(': stream open')) markOpen();
      }
    } catch {
      /* aborted by the test */
    }
    open = false;
    markOpen();
    return text;
  })();
  await opened;
  assert.ok(open, `stream ${url} closed at once:\n${text}`);
  return { ended, isOpen: () => open, close: () => ac.abort() };
}

async function endsWithin(s: Stream, what: string, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const out = await Promise.race([s.ended, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]);
  clearTimeout(timer);
  assert.ok(out !== null, `${what}: the stream is still open`);
  assert.match(out, /: access ended \((401|403|404) [A-Z_]+\)/, `${what}: ended without saying why:\n${out}`);
  return out;
}

describe('streams end when access ends', () => {
  let server: TestServer;
  let team: TestOrg;
  let project: { id: string };
  const open: Stream[] = [];
  const track = (s: Stream) => (open.push(s), s);

  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const logsUrl = (p: string) => `${server.url}/api/projects/${p}/logs/stream`;

  async function streamToken(token: string, projectId: string): Promise<string> {
    const r = await server.api(token).get(`/api/projects/${projectId}/server-logs/stream-token`);
    assert.equal(r.status, 200, r.text);
    return r.body.data.token;
  }

  before(async () => {
    // No background work: a deployment stays queued and a backup run stays pending, so their
    // streams stay open until the test ends them.
    server = await startTestServer({ env: { BERTH_LOCAL_ROOTS: tempDir('berth-roots-') } });
    team = await createTeam(server);
    project = await createProject(server, team.owner);
  });
  after(async () => {
    for (const s of open) s.close();
    await server?.close();
  });

  it('membership removal ends a member\'s runtime-log stream (token); the admin\'s stays open', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const victim = track(await openStream(logsUrl(p.id), bearer(t.member.token)));
    const control = track(await openStream(logsUrl(p.id), bearer(t.admin.token)));
    const del = await server.api(t.owner.token).delete(`/api/permissions/members/${t.member.userId}`);
    assert.equal(del.status, 200, del.text);
    await endsWithin(victim, 'removed member', SOON_MS);
    assert.ok(control.isOpen(), 'the admin\'s stream must stay open');
    // Opening it again meets the route's own answer.
    assert.equal((await fetch(logsUrl(p.id), { headers: bearer(t.member.token) })).status, 401);
  });

  it('a role change ends a request-log stream opened with a stream token; the stream token opens nothing more', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const slt = await streamToken(t.member.token, p.id);
    const url = `${server.url}/api/projects/${p.id}/server-logs/stream?token=${slt}`;
    const victim = track(await openStream(url, {}));
    const control = track(await openStream(`${server.url}/api/projects/${p.id}/server-logs/stream?token=${await streamToken(t.admin.token, p.id)}`, {}));
    const patch = await server.api(t.owner.token).patch(`/api/permissions/members/${t.member.userId}`, { role: 'restricted' });
    assert.equal(patch.status, 200, patch.text);
    await endsWithin(victim, 'demoted member (stream token)', SOON_MS);
    assert.ok(control.isOpen());
    assert.equal((await fetch(url)).status, 403);
  });

  it('a request-log stream opened with a credential ends when the token is revoked', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const second = await createToken(server, t.member, { name: 'stream' });
    const victim = track(await openStream(`${server.url}/api/projects/${p.id}/server-logs/stream`, bearer(second.token)));
    const control = track(await openStream(`${server.url}/api/projects/${p.id}/server-logs/stream`, bearer(t.member.token)));
    assert.equal((await server.api(t.member.token).delete(`/api/auth/tokens/${second.id}`)).status, 200);
    await endsWithin(victim, 'revoked token', SOON_MS);
    assert.ok(control.isOpen(), 'the same user\'s other token keeps its stream');
  });

  it('revoking the token that minted a stream token ends its stream, and the stream token opens nothing more', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const minter = await createToken(server, t.member, { name: 'minter' });
    const slt = await streamToken(minter.token, p.id);
    const url = `${server.url}/api/projects/${p.id}/server-logs/stream?token=${slt}`;
    const victim = track(await openStream(url, {}));
    assert.equal((await server.api(t.member.token).delete(`/api/auth/tokens/${minter.id}`)).status, 200);
    await endsWithin(victim, 'stream token of a revoked token', SOON_MS);
    assert.equal((await fetch(url)).status, 401);
  });

  it('signing out ends the session\'s stream', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const login = await server.api().post('/api/auth/login', { email: t.member.email, password: t.member.password });
    assert.equal(login.status, 200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const victim = track(await openStream(logsUrl(p.id), { cookie }));
    const control = track(await openStream(logsUrl(p.id), bearer(t.member.token)));
    const out = await server.api().post('/api/auth/logout', undefined, { cookie, origin: new URL(server.url).origin });
    assert.equal(out.status, 200);
    await endsWithin(victim, 'signed-out session', SOON_MS);
    assert.ok(control.isOpen(), 'the user\'s token keeps its stream');
  });

  it('a grant change ends a restricted member\'s build-log stream', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const other = await createProject(server, t.owner);
    await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: tempDir('berth-src-') }).where('id', '=', p.id).execute();
    const dep = await server.api(t.owner.token).post('/api/deployments', { projectId: p.id });
    assert.equal(dep.status, 202, dep.text);
    await createGrant(server, t.restricted, 'project', p.id, ['read']);
    const url = `${server.url}/api/deployments/${dep.body.data.id}/logs/stream`;
    const victim = track(await openStream(url, bearer(t.restricted.token)));
    const control = track(await openStream(url, bearer(t.member.token)));
    // The member's grants now cover another project only.
    const put = await server.api(t.owner.token).put('/api/permissions/grants', { userId: t.restricted.userId, grants: [{ resourceType: 'project', resourceId: other.id, permissions: ['read'] }] });
    assert.equal(put.status, 200, put.text);
    await endsWithin(victim, 'grant moved to another project', SOON_MS);
    assert.ok(control.isOpen());
  });

  it('a grant removal ends a build-log stream opened with a deployment-session token', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: tempDir('berth-src-') }).where('id', '=', p.id).execute();
    const dep = await server.api(t.owner.token).post('/api/deployments', { projectId: p.id });
    assert.equal(dep.status, 202, dep.text);
    const grantId = await createGrant(server, t.restricted, 'project', p.id, ['read']);
    const session = await server.api(t.restricted.token).post(`/api/projects/${p.id}/deployment-session`);
    assert.equal(session.status, 200, session.text);
    const victim = track(await openStream(`${server.url}/api/deployments/${dep.body.data.id}/logs/stream?token=${session.body.data.token}`, {}));
    assert.equal((await server.api(t.owner.token).delete(`/api/permissions/grants/${grantId}`)).status, 200);
    await endsWithin(victim, 'grant removed (deployment-session token)', SOON_MS);
  });

  it('membership removal ends a backup-run progress stream', async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const dest = await createDestination(server, t.owner);
    const pol = await createPolicy(server, t.owner, p, { destinationId: dest.id });
    const run = await server.api(t.owner.token).post(`/api/backup-policies/${pol.id}/run`);
    assert.ok(run.status === 201 || run.status === 200, run.text);
    const url = `${server.url}/api/backup-runs/${run.body.data.runId}/stream`;
    const victim = track(await openStream(url, bearer(t.member.token)));
    const control = track(await openStream(url, bearer(t.admin.token)));
    assert.equal((await server.api(t.owner.token).delete(`/api/permissions/members/${t.member.userId}`)).status, 200);
    const text = await endsWithin(victim, 'removed member (backup run)', SOON_MS);
    assert.match(text, /event: snapshot/);
    assert.ok(control.isOpen());
  });

  it("a grant removal ends a restricted member's stream of a managed service's log", async () => {
    const t = await createTeam(server);
    const p = await createProject(server, t.owner);
    const created = await server.api(t.owner.token).post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' });
    assert.equal(created.status, 201, created.text);
    const grantId = await createGrant(server, t.restricted, 'project', p.id, ['read']);
    const url = `${server.url}/api/projects/${p.id}/services/${created.body.data.id}/logs/stream`;
    const victim = track(await openStream(url, bearer(t.restricted.token)));
    const control = track(await openStream(url, bearer(t.member.token)));
    assert.equal((await server.api(t.owner.token).delete(`/api/permissions/grants/${grantId}`)).status, 200);
    await endsWithin(victim, 'grant removed (service log)', SOON_MS);
    assert.ok(control.isOpen());
  });

  it('a change made elsewhere (another instance, the admin CLI) ends the stream within the periodic bound', async () => {
    const victim = track(await openStream(logsUrl(project.id), bearer(team.member.token)));
    const control = track(await openStream(logsUrl(project.id), bearer(team.admin.token)));
    // Written straight to the database: no event reaches this process's streams.
    await server.ctx.db.updateTable('memberships').set({ role: 'restricted' }).where('orgId', '=', team.orgId).where('userId', '=', team.member.userId).execute();
    await endsWithin(victim, 'role changed in the database by someone else', PERIODIC_MS);
    assert.ok(control.isOpen());
  });
});
