import type { Actor } from '../../src/authz/actor.js';
import { createProject } from '../../src/modules/projects/projects.service.js';
import { randomString } from '../../src/lib/ids.js';
import type { TestUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';

/** The actor a test user's own token acts as (for calling services that write real rows). */
export function actorOf(u: TestUser): Actor {
  return { userId: u.userId, email: u.email, orgId: u.orgId, role: u.role, scopes: null, via: 'token', grants: [] };
}

/** A real project row in `owner`'s org, made through the projects service. */
export async function makeProject(server: TestServer, owner: TestUser, name = `p-${randomString(6)}`): Promise<{ id: string; name: string }> {
  const p = await createProject(server.ctx, actorOf(owner), { name });
  return { id: p.id, name: p.name };
}
