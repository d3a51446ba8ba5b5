// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth members ls|invite|rm` and `berth invitations ls|revoke` (docs/cli.md, docs/permissions.md):
 * a team's owner manages its members and invitations, with grants on invite, as the real binary
 * against a real server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

describe('berth members and invitations', () => {
  let server: TestServer;
  let owner: TestUser;
  let member: TestUser;
  let project: TestProject;
  let cli: CliUser;

  before(async () => {
    server = await startTestServer();
    owner = await createUser(server, { team: true });
    member = await createUser(server, { orgId: owner.orgId, role: 'member' });
    project = await createProject(server, owner, { name: 'Team Shop' });
    cli = cliUser(server, owner.token);
  });
  after(() => server?.close());

  it('`members ls` lists the members with their roles', async () => {
    const res = await cli.run(['members', 'ls']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(lines(res.stdout)[0]!, /^USER\s+EMAIL\s+NAME\s+ROLE\s+JOINED$/);
    assert.match(res.stdout, new RegExp(`${owner.userId}\\s+${owner.email}\\s+.*owner`));
    assert.match(res.stdout, new RegExp(`${member.userId}\\s+${member.email}\\s+.*member`));
  });

  it('`members invite --grant project:<slug>:read,write` invites as restricted with the grant on the project id, and prints the link', async () => {
    const res = await cli.run(['members', 'invite', 'Dana@Example.test', '--grant', `project:${project.slug}:read,write`]);
    assert.equal(res.code, 0, res.stderr);
    const [said, link] = lines(res.stdout);
    assert.match(said!, /^invited dana@example\.test as restricted with 1 grant \(inv_\S+\)$/);
    const id = /\((inv_\S+)\)/.exec(said!)![1]!;
    assert.equal(link, `send them this link to accept: ${server.url}/invite/${id}`);
    const listed = await server.api(owner.token).get('/api/permissions/invitations');
    const inv = listed.body.data.find((i: any) => i.id === id);
    assert.equal(inv.role, 'restricted');
    assert.deepEqual(inv.pendingGrants, [{ resourceType: 'project', resourceId: project.id, permissions: ['read', 'write'] }]);
  });

  it('`invitations ls` shows the open invitations with their grants; `--role` invites without grants', async () => {
    const plain = await cli.run(['members', 'invite', 'erin@example.test', '--role', 'admin', '--json']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(JSON.parse(plain.stdout).role, 'admin');
    const res = await cli.run(['invitations', 'ls']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`dana@example\\.test\\s+restricted\\s+pending\\s+\\S+\\s+project:${project.id}:read,write`));
    assert.match(res.stdout, /erin@example\.test\s+admin\s+pending\s+\S+\s+-/);
  });

  it('`invitations revoke EMAIL` cancels it: it leaves the open list, `--all` still shows it', async () => {
    const res = await cli.run(['invitations', 'revoke', 'erin@example.test']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^revoked the invitation of erin@example\.test \(inv_\S+\): its link no longer works$/m);
    const open = JSON.parse((await cli.run(['invitations', 'ls', '--json'])).stdout);
    assert.deepEqual(open.map((i: any) => i.email), ['dana@example.test']);
    const all = JSON.parse((await cli.run(['invitations', 'ls', '--all', '--json'])).stdout);
    assert.equal(all.find((i: any) => i.email === 'erin@example.test').status, 'cancelled');
    const again = await cli.run(['invitations', 'revoke', 'erin@example.test']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^error: no open invitation "erin@example\.test"/);
  });

  it('`members rm EMAIL` removes the member: the API no longer lists them; removing them again is refused (1)', async () => {
    const res = await cli.run(['members', 'rm', member.email]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), `removed ${member.email} (${member.userId}) from the org`);
    const members = await server.api(owner.token).get('/api/permissions/members');
    assert.ok(!members.body.data.some((m: any) => m.userId === member.userId));
    const gone = await cli.run(['members', 'rm', member.email]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no member/);
  });

  it('refusals: a bad --grant or --role is a usage error (2); an unknown project in --grant, or a caller who is not an admin, is refused (1)', async () => {
    const shape = await cli.run(['members', 'invite', 'x@example.test', '--grant', 'project-read']);
    assert.equal(shape.code, 2);
    assert.match(shape.stderr, /--grant takes TYPE:ID:LEVELS/);
    const level = await cli.run(['members', 'invite', 'x@example.test', '--grant', `project:${project.slug}:read,own`]);
    assert.equal(level.code, 2);
    assert.match(level.stderr, /--grant levels are read, write, admin \(got "own"/);
    const role = await cli.run(['members', 'invite', 'x@example.test', '--role', 'boss']);
    assert.equal(role.code, 2);
    const unknown = await cli.run(['members', 'invite', 'x@example.test', '--grant', 'project:nope:read']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /--grant: no project "nope"/);
    const plain = await createUser(server, { orgId: owner.orgId, role: 'member' });
    const refused = await cliUser(server, plain.token).run(['members', 'ls']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^error: .*\[FORBIDDEN\]$/m);
    const invites = JSON.parse((await cli.run(['invitations', 'ls', '--json'])).stdout);
    assert.ok(!invites.some((i: any) => i.email === 'x@example.test'), 'no refused invitation was made');
  });
});
