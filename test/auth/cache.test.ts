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

  it('do not keep a value read while a drop happened (a grant written while the credential was being resolved)', () => {
    const caches = new AuthCaches();
    const before = caches.actors.generation;
    // The database read is in flight; meanwhile a grant of this user is written and announced.
    caches.drop({ userId: 'usr_a', orgId: 'org_a' });
    caches.actors.set('t:hash', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, before);
    assert.equal(caches.actors.get('t:hash'), undefined);
    // Read again after the drop: kept.
    caches.actors.set('t:hash', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, caches.actors.generation);
    assert.equal(caches.actors.get('t:hash')?.actor.userId, 'usr_a');
  });

  it('a drop concerning another user drops only that user, but still does not keep reads in flight', () => {
    const caches = new AuthCaches();
    caches.actors.set('t:a', { actor: actor('usr_a', 'org_a'), expiresAt: Infinity }, caches.actors.generation);
    const before = caches.actors.generation;
    caches.drop({ userId: 'usr_b' });
    assert.ok(caches.actors.get('t:a'));
    caches.actors.set('t:b', { actor: actor('usr_b', 'org_a'), expiresAt: Infinity }, before);
    assert.equal(caches.actors.get('t:b'), undefined);
  });
});
