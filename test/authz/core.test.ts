import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Actor } from '../../src/authz/actor.js';
import { authorize, can } from '../../src/authz/authorize.js';
import { roleAllows } from '../../src/authz/roles.js';
import { levelAtLeast, parseTag, tagCovers } from '../../src/authz/tags.js';
import { AppError } from '../../src/lib/errors.js';

function actor(role: Actor['role'], extra: Partial<Actor> = {}): Actor {
  return { userId: 'usr_1', email: 'a@b.c', orgId: 'org_1', role, scopes: null, via: 'token', grants: [], ...extra };
}
const P = (id: string, orgId = 'org_1') => ({ orgId, grantKeys: [{ type: 'project' as const, id }] });

function status(fn: () => void): number {
  try {
    fn();
    return 200;
  } catch (e) {
    return (e as AppError).status;
  }
}

describe('permission tags', () => {
  it('parse resource, optional sub and level', () => {
    assert.deepEqual(parseTag('project:read'), { resource: 'project', sub: undefined, level: 'read' });
    assert.deepEqual(parseTag('backup_destination:backup_run:write'), { resource: 'backup_destination', sub: 'backup_run', level: 'write' });
    assert.throws(() => parseTag('project:owner'));
  });

  it('a higher level implies the lower ones', () => {
    assert.ok(levelAtLeast('admin', 'list'));
    assert.ok(levelAtLeast('write', 'read'));
    assert.ok(!levelAtLeast('read', 'write'));
  });

  it('a tag without a sub covers every sub of its resource; a sub covers only itself', () => {
    assert.ok(tagCovers(parseTag('project:write'), parseTag('project:deployment:list')));
    assert.ok(!tagCovers(parseTag('project:deployment:read'), parseTag('project:read')));
    assert.ok(!tagCovers(parseTag('project:read'), parseTag('gitprovider:read')));
  });
});

describe('the role table (contract section 4)', () => {
  it('owner and admin hold everything', () => {
    for (const t of ['project:admin', 'permissions:admin', 'audit:read', 'backup_destination:admin']) {
      assert.ok(roleAllows('owner', parseTag(t)));
      assert.ok(roleAllows('admin', parseTag(t)));
    }
  });

  it('member holds project list/read/write, deployment list, gitprovider up to write, backup subresources up to write; no admin', () => {
    const yes = ['project:list', 'project:read', 'project:write', 'project:deployment:list', 'gitprovider:write', 'backup_destination:backup_run:read', 'backup_destination:backup_policy:write', 'backup_destination:read', 'permissions:read'];
    const no = ['project:admin', 'gitprovider:admin', 'backup_destination:write', 'backup_destination:backup_restore:admin', 'audit:read', 'billing:read'];
    for (const t of yes) assert.ok(roleAllows('member', parseTag(t)), t);
    for (const t of no) assert.ok(!roleAllows('member', parseTag(t)), t);
  });

  it('restricted holds nothing by role', () => {
    assert.ok(!roleAllows('restricted', parseTag('project:list')));
  });
});

describe('authorize()', () => {
  it('another org\'s record and a missing record are the same 404', () => {
    assert.equal(status(() => authorize(actor('owner'), 'project:read', P('p1', 'org_2'))), 404);
    assert.equal(status(() => authorize(actor('owner'), 'project:read', null)), 404);
  });

  it('a same-org record the actor may not touch is 403', () => {
    assert.equal(status(() => authorize(actor('member'), 'project:admin', P('p1'))), 403);
    assert.equal(status(() => authorize(actor('restricted'), 'project:read', P('p1'))), 403);
  });

  it('grants widen only restricted, per resource, with levels implying lower ones', () => {
    const r = actor('restricted', { grants: [{ id: 'g', resourceType: 'project', resourceId: 'p1', permissions: ['write'] }] });
    assert.ok(can(r, 'project:read', P('p1')));
    assert.ok(can(r, 'project:write', P('p1')));
    assert.ok(can(r, 'project:deployment:list', P('p1')));
    assert.ok(!can(r, 'project:admin', P('p1')));
    assert.ok(!can(r, 'project:read', P('p2')));
    // What hangs under a project carries the project's key.
    assert.ok(can(r, 'backup_destination:backup_run:write', P('p1')));
    // A member is resolved by role; grants add nothing.
    const m = actor('member', { grants: [{ id: 'g', resourceType: 'project', resourceId: 'p1', permissions: ['admin'] }] });
    assert.ok(!can(m, 'project:admin', P('p1')));
  });

  it('a `*` grant covers every resource of its type, including ones made later, and org-level checks', () => {
    const r = actor('restricted', { grants: [{ id: 'g', resourceType: 'project', resourceId: '*', permissions: ['read'] }] });
    assert.ok(can(r, 'project:read', P('anything-made-later')));
    assert.ok(!can(r, 'project:write', P('p1')));
    assert.ok(!can(r, 'project:write'));
    const w = actor('restricted', { grants: [{ id: 'g', resourceType: 'project', resourceId: '*', permissions: ['write'] }] });
    assert.ok(can(w, 'project:write'));
    const one = actor('restricted', { grants: [{ id: 'g', resourceType: 'project', resourceId: 'p1', permissions: ['admin'] }] });
    assert.ok(!can(one, 'project:write'), 'a grant on one project does not allow org-level writes');
  });

  it('listing is open to restricted members (the list answers only what they can read)', () => {
    assert.ok(can(actor('restricted'), 'project:list'));
  });

  it('token scopes narrow every role', () => {
    const scoped = actor('owner', { scopes: ['project:read'] });
    assert.ok(can(scoped, 'project:read', P('p1')));
    assert.ok(!can(scoped, 'project:write', P('p1')));
    assert.ok(!can(scoped, 'audit:read'));
  });
});
