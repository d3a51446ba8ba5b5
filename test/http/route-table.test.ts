import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTag } from '../../src/authz/tags.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('the route table', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('GET /api/openapi.json lists every registered route with its permission tag', async () => {
    const res = await server.api().get('/api/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const registered = server.app.berth.routes;
    assert.ok(registered.length > 5);
    for (const r of registered) {
      const op = res.body.paths[r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[r.method.toLowerCase()];
      assert.ok(op, `${r.method} ${r.url} is missing from the OpenAPI document`);
      assert.equal(op['x-permission'], r.tag, `${r.method} ${r.url}`);
      assert.equal(op['x-access'], r.access);
    }
    let documented = 0;
    for (const methods of Object.values(res.body.paths) as Record<string, unknown>[]) documented += Object.keys(methods).length;
    assert.equal(documented, registered.length);
  });

  it('every route that is not public or per-user declares a well-formed permission tag', () => {
    for (const r of server.app.berth.routes) {
      if (r.access === 'public' || r.access === 'authenticated') continue;
      assert.ok(r.tag && isTag(r.tag), `${r.method} ${r.url} has no permission tag`);
    }
  });

  it('every route acting on a record names its path parameter, and the parameter exists in the path', () => {
    for (const r of server.app.berth.routes) {
      if (!r.resource) continue;
      assert.ok(r.url.includes(`:${r.resource.param}`), `${r.method} ${r.url} resource param ${r.resource.param}`);
    }
  });

  it('public routes are few and named', () => {
    const pub = server.app.berth.routes.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.url}`);
    const allowed = new Set([
      'GET /api/health',
      'GET /api/openapi.json',
      'POST /api/auth/signup',
      'POST /api/auth/login',
      'GET /api/gitprovider/connect/redirect',
      'POST /api/gitprovider/webhook',
      'POST /api/webhooks/backup',
      'POST /api/projects/folder/upload/:sessionId',
      'POST /api/uploads/:sessionId',
      // Stream routes a browser EventSource opens with a short-lived token (`?token=`); a credential works
      // too. The handler authorizes either way (src/modules/deployments/deployments.routes.ts).
      'GET /api/deployments/:id/logs',
      'GET /api/deployments/:id/logs/stream',
      'GET /api/projects/:id/server-logs/stream',
    ]);
    for (const p of pub) assert.ok(allowed.has(p), `unexpected public route ${p}`);
  });
});
