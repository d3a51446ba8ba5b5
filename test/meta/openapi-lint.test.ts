import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { startTestServer, type TestServer } from '../support/harness.js';

/**
 * The OpenAPI document (GET /api/openapi.json, built from the app's route definitions) as a client
 * generator sees it: it lints clean with Redocly's recommended rules (offline: the rules ship with
 * @redocly/openapi-core), and every operation says what it answers on success.
 */
describe('the OpenAPI document', () => {
  let server: TestServer;
  let doc: any;
  before(async () => {
    server = await startTestServer();
    const res = await server.api().get('/api/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => server.close());

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })));

  it("has no problem under Redocly's recommended rules", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    const lines = problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer ?? '?'}: ${p.message}`);
    assert.deepEqual(lines, [], `${lines.length} problems:\n  ${lines.join('\n  ')}`);
  });

  it('every operation declares a success (2xx) response with a schema', () => {
    const missing = operations()
      .filter(({ op }) => !Object.entries(op.responses ?? {}).some(([status, r]: [string, any]) => /^2\d\d$/.test(status) && Object.values(r.content ?? {}).some((c: any) => c?.schema)))
      .map(({ name }) => name);
    assert.deepEqual(missing, [], `${missing.length} operations without a 2xx response schema:\n  ${missing.join('\n  ')}`);
  });

  it('every operation has a unique, URL-safe camelCase operationId', () => {
    const seen = new Map<string, string>();
    const bad: string[] = [];
    for (const { name, op } of operations()) {
      if (typeof op.operationId !== 'string' || !/^[a-z][A-Za-z0-9]*$/.test(op.operationId)) bad.push(`${name}: ${op.operationId}`);
      else if (seen.has(op.operationId)) bad.push(`${name}: ${op.operationId} also names ${seen.get(op.operationId)}`);
      else seen.set(op.operationId, name);
    }
    assert.deepEqual(bad, []);
  });
});
