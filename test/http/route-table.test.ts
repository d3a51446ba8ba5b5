import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTag } from '../../src/authz/tags.js';
import { routeInfo, type AnyRoute, type RouteInfo } from '../../src/http/route.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/** The route table as data: every route declares what it requires, consistently, and the OpenAPI document shows it. */
describe('the route table', () => {
  let server: TestServer;
  let defs: { def: AnyRoute; info: RouteInfo }[];
  before(async () => {
    server = await startTestServer();
    defs = server.app.berth.modules.flatMap((m) => m.routes.map((def) => ({ def, info: routeInfo(def) })));
  });
  after(() => server.close());

  const name = (r: { method: string; url: string }) => `${r.method} ${r.url}`;

  it('every route\'s request and response schemas compile (they are compiled on first request, not at start)', () => {
    const withSchemas = defs.filter(({ def }) => def.schema && Object.values(def.schema).some(Boolean)).length;
    assert.ok(server.app.berth.compileAllSchemas() >= withSchemas, 'each route with a schema has at least one validator or serialiser');
  });

  it('GET /api/openapi.json lists every registered route with everything it requires', async () => {
    const res = await server.api().get('/api/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const registered = server.app.berth.routes;
    assert.ok(registered.length > 5);
    for (const r of registered) {
      const op = res.body.paths[r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[r.method.toLowerCase()];
      assert.ok(op, `${name(r)} is missing from the OpenAPI document`);
      assert.equal(op['x-permission'], r.tag, name(r));
      assert.equal(op['x-access'], r.access, name(r));
      assert.equal(op['x-role-gate'], r.gate, name(r));
      assert.deepEqual(op['x-requires'], r.requires, name(r));
      assert.equal(op['x-stream-token'], r.streamToken, name(r));
      const where = r.resource ? { kind: r.resource.kind, in: r.resource.from === 'param' ? 'path' : r.resource.from, name: r.resource.field, optional: r.resource.optional } : null;
      assert.deepEqual(op['x-resource'], where, name(r));
    }
    let documented = 0;
    for (const methods of Object.values(res.body.paths) as Record<string, unknown>[]) documented += Object.keys(methods).length;
    assert.equal(documented, registered.length);
  });

  it('every route that is not public or per-user declares a well-formed permission tag, and every requirement is a tag', () => {
    const bad: string[] = [];
    for (const { info: r } of defs) {
      if (r.access !== 'public' && r.access !== 'authenticated' && !(r.tag && isTag(r.tag))) bad.push(`${name(r)} has no permission tag`);
      for (const q of r.requires) if (!isTag(q.tag)) bad.push(`${name(r)} requires ${q.tag}, not a tag`);
    }
    assert.deepEqual(bad, []);
  });

  it('every resource names a field that exists where it says: a path parameter, a query field or a body field', () => {
    const bad: string[] = [];
    for (const { def, info: r } of defs) {
      if (!r.resource) continue;
      const { from, field } = r.resource;
      const props = (s: unknown) => (s as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
      if (from === 'param' && !r.url.includes(`:${field}`)) bad.push(`${name(r)}: resource param :${field} is not in the path`);
      if (from === 'query' && !(field in props(def.schema?.querystring))) bad.push(`${name(r)}: resource query field ${field} is not in the querystring schema`);
      if (from === 'body' && !(field in props(def.schema?.body))) bad.push(`${name(r)}: resource body field ${field} is not in the body schema`);
      if (from === 'param' && r.resource.optional) bad.push(`${name(r)}: a path parameter cannot be optional`);
    }
    assert.deepEqual(bad, []);
  });

  it('access, resource, requires and stream tokens agree: only tag-checked routes act on a record or have requirements', () => {
    const bad: string[] = [];
    for (const { def, info: r } of defs) {
      const checked = r.access === 'tag' || r.access === 'stream-token';
      // A `member`, `authenticated` or `public` route checks no record: a resource there would be resolved for nothing.
      if (r.resource && !checked) bad.push(`${name(r)}: access ${r.access} with a ${r.resource.from} resource (the gate would not authorize it)`);
      if (r.requires.length && !checked) bad.push(`${name(r)}: access ${r.access} with requires`);
      // A requirement on the record (or its parent project) needs a record.
      if (r.requires.length && !r.resource) bad.push(`${name(r)}: requires without a resource`);
      if (r.requires.some((q) => q.on === 'project') && r.resource?.optional) bad.push(`${name(r)}: a requirement on the parent project of an optional resource`);
      if ((r.access === 'stream-token') !== (r.streamToken !== null)) bad.push(`${name(r)}: access ${r.access} with streamToken ${r.streamToken}`);
      if (r.access === 'stream-token' && r.resource?.from !== 'param') bad.push(`${name(r)}: a stream token is for the record named in the path`);
      if (r.gate && r.access !== 'tag') bad.push(`${name(r)}: the admin gate on a ${r.access} route`);
      if (r.selfHostedOnly && r.cloudOnly) bad.push(`${name(r)}: both self-hosted-only and cloud-only`);
      // What a route answers on success: a schema (serialised by it), or a raw content type.
      if (def.raw && !def.produces) bad.push(`${name(r)}: a raw route without \`produces\``);
      if (!def.raw && def.produces) bad.push(`${name(r)}: \`produces\` on a route that is not raw`);
    }
    assert.deepEqual(bad, []);
  });

  it('public routes are few and named', () => {
    const pub = server.app.berth.routes.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.url}`);
    const allowed = new Set([
      'GET /api/health',
      'GET /api/openapi.json',
      'POST /api/auth/signup',
      'POST /api/auth/login',
      'GET /api/permissions/invitations/:id/summary',
      'GET /api/gitprovider/connect/redirect',
      'POST /api/gitprovider/webhook',
      'POST /api/webhooks/backup',
      'POST /api/projects/folder/upload/:sessionId',
      'POST /api/uploads/:sessionId',
    ]);
    for (const p of pub) assert.ok(allowed.has(p), `unexpected public route ${p}`);
  });
});
