import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuthCaches, TtlCache } from '../../src/modules/auth/auth.cache.js';
import type { Actor } from '../../src/authz/actor.js';

const actor = (userId: string, orgId: string): Actor => ({ userId, email: `${userId}@example.test`, orgId, role: 'restricted', scopes: null, via: 'token', grants: [] });

describe('the auth caches', () => {
  it('keep a value read under the current generation, for a short while', () => {
    const c = new TtlCache<string>();
    const gen = c.generation;
    c.set('k', 'v', gen, 1000);
    assert.equal(c.get('k', 1500), 'v');
    assert.equal(c.get('k', 1000 + 60_000), undefined);
  });

  it('let go of expired entries nobody asks for again: the next lookup after a TTL sweeps them out', () => {
    const c = new TtlCache<string>();
    c.set('berth_pat_used_once', 'v', c.generation, 1000);
    c.set('berth_pat_used_again', 'v', c.generation, 2500);
    assert.equal(c.size, 2);
    assert.equal(c.get('berth_pat_used_again', 3500), 'v');
    assert.equal(c.size, 1, 'the entry 2.5 s old is swept out');
    c.set('berth_pat_used_later', 'v', c.generation, 4000);
    assert.equal(c.get('berth_pat_used_later', 5000), 'v');
    assert.equal(c.size, 2, 'within a TTL of the last sweep nothing is swept');
    assert.equal(c.get('berth_pat_elsewhere', 7000), undefined);
    assert.equal(c.size, 0);
  });

  it('do not keep a value read while a drop happened (a grant written while the credential was being resolved)', () => {
    const caches = new AuthCaches();
    const before = caches.bearers.generation;
    // The database read is in flight; meanwhile a grant of this user is written and announced.
    caches.drop({ userId: 'usr_a', orgId: 'org_a' });
    caches.bearers.set('t:hash', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, before);
    assert.equal(caches.bearers.get('t:hash'), undefined);
    // Read again after the drop: kept.
    caches.bearers.set('t:hash', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, caches.bearers.generation);
    assert.equal(caches.bearers.get('t:hash')?.actor.userId, 'usr_a');
  });

  it('a drop concerning another user drops only that user, but still does not keep reads in flight', () => {
    const caches = new AuthCaches();
    caches.bearers.set('t:a', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, caches.bearers.generation);
    const before = caches.bearers.generation;
    caches.drop({ userId: 'usr_b' });
    assert.ok(caches.bearers.get('t:a'));
    caches.bearers.set('t:b', { actor: actor('usr_b', 'org_a'), expiresAt: Infinity }, before);
    assert.equal(caches.bearers.get('t:b'), undefined);
  });
});
