import assert from 'node:assert/strict';
import type { HttpResponse } from '../support/http.js';
import type { TestServer } from '../support/harness.js';
import type { TestUser } from '../support/factories.js';

/** Creates a project over HTTP as `user` and answers its record. */
export async function makeProject(server: TestServer, user: TestUser, body: Record<string, unknown> = {}): Promise<any> {
  const r = await server.api(user.token).post('/api/projects', { name: `app-${Math.random().toString(36).slice(2, 8)}`, ...body });
  assert.equal(r.status, 201, r.text);
  return r.body.data;
}

/** Asserts an error answer: status, code and (when given) the named field. */
export function assertError(r: HttpResponse, status: number, code: string, field?: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.body?.error?.code, code, r.text);
  if (field !== undefined) assert.equal(r.body.error.field, field, r.text);
  assert.ok(r.body.error.requestId, 'error carries a requestId');
}
