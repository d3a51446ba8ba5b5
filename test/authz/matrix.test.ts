/**
 * THE AUTHORIZATION MATRIX (issue 3, point 6).
 *
 * Every registered route x every principal x (own record, another org's record, missing id), as
 * data. The test walks the live route registry (`server.app.berth.modules`) and FAILS when a
 * registered route has no row (except routes of modules listed in PENDING_MODULES below), when a
 * row names no registered route, and when any principal gets another status than its row says.
 *
 * Principals (matrix.ts): anonymous, badToken, revokedToken, owner, admin, member, restricted
 * (no grant), restrictedRead / restrictedWrite / restrictedAdmin (a read / write / admin grant on
 * the row's own record: the fixture's `grantKeys`; no `*` grants), otherOwner (owner of org B).
 *
 * What a route requires is read from its declaration (`routeInfo`), not restated here: its access,
 * role gate, tag and `requires` give who of org A may call it on org A's record (`declaredAllow` in
 * matrix.ts, checked against the fixture's grant keys), and its resource says where the record's id
 * goes (path, query or body field). A row states only what the declaration cannot: the request's
 * other parameters and, with a `note`, a handler's domain rule that narrows who may (`allow`).
 *
 * How to add your module's routes:
 *   1. Create `test/authz/rows/<module>.ts` exporting `rows: MatrixRow[]`, one row per route:
 *        { method: 'GET', path: '/api/projects/:id', fixture: 'project' }
 *      `path` is the route exactly as registered. Who may do it on org A's record comes from the
 *      route; they must get a status that is not 401/403/404 (a 400/409 from a dummy body is fine),
 *      everyone else gets exactly 401 (no or bad credential), 403 (same org, not allowed) or 404
 *      (otherOwner on org A's record). Give exact statuses with `expect: { member: 201 }`, `otherOrg` /
 *      `missing` when they are not 404, `body` / `query` (values or functions of the record), `fresh:
 *      true` when the route uses up its record (delete, cancel), `params` for path parameters that are
 *      not records, and `allow` (presets: ANY_MEMBER, ADMINS, byGrant(level, { member })) only when
 *      the handler narrows what the route declares.
 *   2. If your routes act on a new kind of record, add a fixture (fixtures.ts, or export `fixtures`
 *      from your rows file): `make({ world, which, caller })` writes a real record in org A
 *      (`which: 'own'`) or org B (`'other'`) and returns `{ params, grantKeys }` (params named as the
 *      route's path parameter or resource field).
 *   3. Remove your module from PENDING_MODULES.
 * Keep it fast: one server and one set of principals for the whole file, requests run 6 at a time.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { GrantKey } from '../../src/authz/grants.js';
import { routeInfo, type RouteInfo } from '../../src/http/route.js';
import { randomString } from '../../src/lib/ids.js';
import { createGrant, createTeam, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { coreFixtures } from './fixtures.js';
import { declaredAllow, expectedOwn, meets, ORG_A_MEMBERS, PRINCIPALS, type Expect, type Fixture, type MatrixRow, type PrincipalName, type RecordRef, type World } from './matrix.js';

/**
 * Modules whose routes may still lack rows while their areas are being built. The lead empties
 * this list; a module not listed here fails the test for every route without a row.
 */
export const PENDING_MODULES: string[] = [];

const CONCURRENCY = 6;

// ---------------------------------------------------------------- rows and fixtures, loaded up front

type LoadedRow = MatrixRow & { file: string };
const rowsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rows');
const rowFiles = readdirSync(rowsDir).filter((f) => f.endsWith('.ts')).sort();
const allRows: LoadedRow[] = [];
const fixtures: Record<string, Fixture> = { ...coreFixtures };
for (const f of rowFiles) {
  const mod = (await import(pathToFileURL(path.join(rowsDir, f)).href)) as { rows?: MatrixRow[]; fixtures?: Record<string, Fixture> };
  for (const r of mod.rows ?? []) allRows.push({ ...r, file: f });
  Object.assign(fixtures, mod.fixtures ?? {});
}
const keyOf = (method: string, url: string) => `${method} ${url}`;
const pathParams = (url: string) => (url.match(/:([A-Za-z0-9_]+)/g) ?? []).map((s) => s.slice(1));

async function pool(jobs: (() => Promise<void>)[], n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, jobs.length) }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
}

describe('authorization matrix: every route x every principal x own / other org / missing record', () => {
  let server: TestServer;
  let world: World;
  let registered: Map<string, { module: string; info: RouteInfo }>;
  const sharedOwn = new Map<string, Promise<RecordRef>>();
  const sharedOther = new Map<string, Promise<RecordRef>>();

  async function grantRestricted(keys: GrantKey[] | undefined): Promise<void> {
    if (!keys?.length) return;
    const levels: [PrincipalName, string[]][] = [
      ['restrictedRead', ['read']],
      ['restrictedWrite', ['write']],
      ['restrictedAdmin', ['admin']],
    ];
    for (const [p, permissions] of levels) {
      for (const k of keys) await createGrant(server, world.users[p]!, k.type, k.id, permissions);
    }
  }

  async function ownRecord(row: MatrixRow, caller: TestUser | null): Promise<RecordRef | undefined> {
    if (!row.fixture) return undefined;
    const fx = fixtures[row.fixture]!;
    if (fx.perCaller || row.fresh) {
      const rec = await fx.make({ world, which: 'own', caller });
      await grantRestricted(rec.grantKeys);
      return rec;
    }
    if (!sharedOwn.has(row.fixture)) {
      sharedOwn.set(
        row.fixture,
        fx.make({ world, which: 'own', caller: null }).then(async (rec) => {
          await grantRestricted(rec.grantKeys);
          return rec;
        }),
      );
    }
    return sharedOwn.get(row.fixture)!;
  }

  async function otherRecord(row: MatrixRow, caller: TestUser | null): Promise<RecordRef> {
    const fx = fixtures[row.fixture!]!;
    if (fx.perCaller || row.fresh) return fx.make({ world, which: 'other', caller });
    if (!sharedOther.has(row.fixture!)) sharedOther.set(row.fixture!, fx.make({ world, which: 'other', caller: null }));
    return sharedOther.get(row.fixture!)!;
  }

  const infoOf = (row: MatrixRow) => registered.get(keyOf(row.method, row.path))?.info;

  function idParamOf(row: MatrixRow): string | undefined {
    return row.idParam ?? infoOf(row)?.resource?.field ?? pathParams(row.path).at(-1);
  }

  /**
   * The request of a row: path parameters from `params`, the row's query and body, and, for a route
   * whose resource is named in the body or the query, the record's id there (from `params`).
   */
  async function send(row: MatrixRow, p: PrincipalName, rec: RecordRef | undefined, params: Record<string, string>) {
    const caller = world.users[p];
    const resource = row.fixture ? infoOf(row)?.resource : undefined;
    let url = row.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? `missing-param-${name}`));
    let q = typeof row.query === 'function' ? row.query(rec, world, caller) : row.query;
    let body = typeof row.body === 'function' ? row.body(rec, world, caller) : row.body;
    const id = resource ? params[resource.field] : undefined;
    if (resource?.from === 'query' && id !== undefined && !new URLSearchParams(q ?? '').has(resource.field)) q = `${q ? `${q}&` : ''}${resource.field}=${encodeURIComponent(id)}`;
    if (resource?.from === 'body' && id !== undefined && (body === undefined || (typeof body === 'object' && !Array.isArray(body)))) body = { ...(body as object | undefined), [resource.field]: id };
    if (q) url += `?${q}`;
    return server.api(world.tokens[p]).request(row.method, url, body);
  }

  /** Who may call the row's route on org A's record: the row's `allow`, else what the route declares. */
  async function allowOf(row: MatrixRow): Promise<PrincipalName[] | 'public'> {
    if (row.allow) return row.allow;
    const fx = row.fixture ? fixtures[row.fixture] : undefined;
    // The restricted principals hold grants on the keys of the record (per-caller records have none).
    const keys = fx && !fx.perCaller ? (await ownRecord({ ...row, fresh: false }, null))?.grantKeys : undefined;
    return declaredAllow(infoOf(row)!, keys, !!fx);
  }

  function check(failures: string[], row: MatrixRow, p: PrincipalName, target: string, want: Expect, res: { status: number; text: string; body: any }): void {
    let ok = meets(res.status, want);
    if (ok && typeof want === 'number' && [401, 403, 404].includes(want)) {
      const code = { 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 404: 'NOT_FOUND' }[want as 401 | 403 | 404];
      ok = res.body?.error?.code === code;
    }
    if (!ok) failures.push(`${row.method} ${row.path} as ${p} on ${target}: expected ${want}, got ${res.status} ${res.text.slice(0, 160)}`);
  }

  async function runRow(row: LoadedRow, failures: string[]): Promise<(() => Promise<void>)[]> {
    const jobs: (() => Promise<void>)[] = [];
    const fx = row.fixture ? fixtures[row.fixture] : undefined;
    const allow = await allowOf(row);
    for (const p of PRINCIPALS) {
      jobs.push(async () => {
        const rec = await ownRecord(row, world.users[p]);
        const res = await send(row, p, rec, { ...row.params, ...rec?.params });
        check(failures, row, p, 'own record', expectedOwn(row, allow, p, fx), res);
      });
    }
    if (!fx) return jobs;
    const allowed = allow === 'public' ? (['anonymous'] as PrincipalName[]) : ORG_A_MEMBERS.filter((p) => allow.includes(p));
    const probe = [...new Set([allowed[0], allowed.at(-1), allowed.includes('member') ? 'member' : undefined].filter(Boolean) as PrincipalName[])];
    const idParam = idParamOf(row)!;
    for (const p of probe) {
      jobs.push(async () => {
        const caller = world.users[p];
        let other: { status: number; text: string; body: any } | undefined;
        let missing: { status: number; text: string; body: any } | undefined;
        if (row.otherOrg !== null) {
          const rec = await otherRecord(row, caller);
          other = await send(row, p, rec, { ...row.params, ...rec.params });
          check(failures, row, p, "another org's record", row.otherOrg ?? 404, other);
        }
        if (row.missing !== null) {
          const base = pathParams(row.path).length > 1 && !fx.perCaller ? ((await ownRecord({ ...row, fresh: false }, caller))?.params ?? {}) : {};
          const params = { ...row.params, ...base, [idParam]: fx.missingId ?? `zz_missing${randomString(14)}` };
          missing = await send(row, p, undefined, params);
          check(failures, row, p, 'a missing id', row.missing ?? 404, missing);
        }
        if (other?.status === 404 && missing?.status === 404) {
          const strip = (b: any) => ({ ...b?.error, requestId: undefined });
          if (JSON.stringify(strip(other.body)) !== JSON.stringify(strip(missing.body))) {
            failures.push(`${row.method} ${row.path} as ${p}: another org's record and a missing id answer different 404 bodies: ${other.text} vs ${missing.text}`);
          }
        }
      });
    }
    return jobs;
  }

  before(async () => {
    server = await startTestServer();
    registered = new Map();
    for (const m of server.app.berth.modules) for (const def of m.routes) registered.set(keyOf(def.method, def.url), { module: m.name, info: routeInfo(def) });
    const team = await createTeam(server);
    const [restrictedRead, restrictedWrite, restrictedAdmin, otherOwner] = await Promise.all([
      createUser(server, { orgId: team.orgId, role: 'restricted' }),
      createUser(server, { orgId: team.orgId, role: 'restricted' }),
      createUser(server, { orgId: team.orgId, role: 'restricted' }),
      createUser(server, { team: true }),
    ]);
    const revoked = (await server.api(team.member.token).post('/api/auth/tokens', { name: 'to-revoke' })).body.data;
    assert.equal((await server.api(team.member.token).delete(`/api/auth/tokens/${revoked.id}`)).status, 200);
    const users: Record<PrincipalName, TestUser | null> = {
      anonymous: null,
      badToken: null,
      revokedToken: null,
      owner: team.owner,
      admin: team.admin,
      member: team.member,
      restricted: team.restricted,
      restrictedRead,
      restrictedWrite,
      restrictedAdmin,
      otherOwner,
    };
    const tokens = Object.fromEntries(PRINCIPALS.map((p) => [p, users[p]?.token])) as Record<PrincipalName, string | undefined>;
    tokens.badToken = `berth_pat_${randomString(43)}`;
    tokens.revokedToken = revoked.token;
    world = {
      server,
      orgA: { orgId: team.orgId, owner: team.owner, admin: team.admin, member: team.member, restricted: team.restricted, restrictedRead, restrictedWrite, restrictedAdmin },
      orgB: { orgId: otherOwner.orgId, owner: otherOwner },
      tokens,
      users,
    };
  });
  after(() => server.close());

  it('every registered route has a row (modules in PENDING_MODULES excepted)', () => {
    const covered = new Set(allRows.map((r) => keyOf(r.method, r.path)));
    const missing = [...registered].filter(([k, v]) => !covered.has(k) && !PENDING_MODULES.includes(v.module)).map(([k, v]) => `${k} (module ${v.module})`);
    assert.deepEqual(missing, [], `routes without a row in test/authz/rows/:\n  ${missing.join('\n  ')}`);
  });

  it('every row names a registered route, once, with a known fixture or static params for its path parameters', () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const r of allRows) {
      const k = keyOf(r.method, r.path);
      if (!registered.has(k)) problems.push(`rows/${r.file}: ${k} is not a registered route`);
      if (seen.has(k)) problems.push(`rows/${r.file}: ${k} has more than one row`);
      seen.add(k);
      if (r.fixture && !fixtures[r.fixture]) problems.push(`rows/${r.file}: ${k} names unknown fixture ${r.fixture}`);
      for (const name of pathParams(r.path)) {
        if (!r.fixture && !r.params?.[name]) problems.push(`rows/${r.file}: ${k} has path parameter :${name} but no fixture or params`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("a row's `allow` differs from what its route declares, and says why (`note`): rows do not restate routes", async () => {
    const problems: string[] = [];
    for (const r of allRows.filter((r) => r.allow && registered.has(keyOf(r.method, r.path)))) {
      const declared = await allowOf({ ...r, allow: undefined });
      const same = JSON.stringify(r.allow === 'public' ? r.allow : [...r.allow!].sort()) === JSON.stringify(declared === 'public' ? declared : [...declared].sort());
      if (same) problems.push(`rows/${r.file}: ${r.method} ${r.path} restates what the route declares (drop \`allow\`)`);
      else if (!r.note) problems.push(`rows/${r.file}: ${r.method} ${r.path} allows ${JSON.stringify(r.allow)} where the route declares ${JSON.stringify(declared)}: say why in \`note\``);
    }
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  for (const file of rowFiles) {
    it(`rows/${file}: every principal gets the status its row gives, on its own org's record, another org's and a missing one`, async () => {
      const failures: string[] = [];
      const rows = allRows.filter((r) => r.file === file && registered.has(keyOf(r.method, r.path)) && (!r.fixture || fixtures[r.fixture]));
      const jobs = (await Promise.all(rows.map((r) => runRow(r, failures)))).flat();
      await pool(
        jobs.map((j) => async () => {
          try {
            await j();
          } catch (e) {
            failures.push(`fixture or request failed: ${(e as Error).stack ?? e}`);
          }
        }),
        CONCURRENCY,
      );
      assert.deepEqual(failures, [], failures.join('\n'));
    });
  }
});
