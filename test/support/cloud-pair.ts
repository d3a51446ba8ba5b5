import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before } from 'node:test';
import { bundleDigest, bundleFromRows, readBundleRows } from '../../src/modules/cloud/bundle.js';
import { createLogger } from '../../src/lib/logger.js';
import { probeModule, probeState, type ProbeState } from '../cloud/probe.js';
import { startDnsStub, type DnsStub } from './dns-stub.js';
import { createTeam, createUser, type TestOrg, type TestUser } from './factories.js';
import { startTestServer, type TestServer } from './harness.js';

/** The digest of a project's full copy (config, env with secret values, domains, rules, ...) on a server. */
export async function digestOn(server: TestServer, orgId: string, projectId: string): Promise<string | undefined> {
  const rows = await readBundleRows(server.ctx.db, orgId, projectId);
  return rows ? bundleDigest(bundleFromRows(server.ctx.keyring, rows)) : undefined;
}
/** Reads an SSE answer through a raw http request; resolves events as they arrive. */
export function openStream(url: string, token: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; next(event: string): Promise<string>; closed: Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (token) headers.authorization = `Bearer ${token}`;
    const req = http.get(url, { headers }, (res) => {
      let buf = '';
      const waiters: Array<{ event: string; resolve: (d: string) => void }> = [];
      const seen: Array<{ event: string; data: string }> = [];
      const flush = () => {
        for (const w of [...waiters]) {
          const i = seen.findIndex((s) => s.event === w.event);
          if (i >= 0) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(seen.splice(i, 1)[0]!.data);
          }
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const ev = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (ev) seen.push({ event: ev, data: data ?? '' });
        }
        flush();
      });
      const closed = new Promise<void>((r) => {
        res.on('end', () => r());
        res.on('close', () => r());
        res.on('error', () => r());
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        next: (event) =>
          new Promise((r, j) => {
            waiters.push({ event, resolve: r });
            flush();
            setTimeout(() => j(new Error(`no ${event} event within 5 s`)), 5000).unref();
          }),
        closed,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

export interface CloudPair {
  /** A hosted cloud (mode: cloud) whose DNS is `dns`; the probe module is loaded on it. */
  readonly cloud: TestServer;
  /** A self-hosted instance linked to the cloud with `cloudOwner`'s token. */
  readonly self: TestServer;
  readonly cloudProbe: ProbeState;
  readonly selfProbe: ProbeState;
  /** The cloud org whose token links the self-hosted instance. */
  readonly cloudOwner: TestUser;
  /** A team on the self-hosted instance (owner, admin, member, restricted). */
  readonly team: TestOrg;
  /** A user of another org on the self-hosted instance. */
  readonly otherOrg: TestUser;
  /** The DNS the cloud checks domain TXT records with (a cloud instance always verifies domains). */
  readonly dns: DnsStub;
  /** The secret value every `shopProject` holds (API_SECRET). */
  readonly SECRET: string;
  /** Everything both servers log, at every level. */
  readonly logged: string[];
  shopProject(owner?: TestUser): Promise<{ id: string; location: string } & Record<string, any>>;
  squatOnCloud(id: string): Promise<void>;
  cloudShop(owner?: TestUser): Promise<{ projectId: string; cloudId: string }>;
  changeOnCloud(cloudId: string): Promise<void>;
}

/**
 * The cloud suites' two servers (docs/cloud.md): a hosted cloud and a self-hosted instance linked to
 * it, with a team and another org on the self-hosted side, started in the suite's `before` and closed
 * in its `after`. Each case makes its own projects (`shopProject`, `cloudShop`). The answer's
 * fields are readable once `before` has run.
 */
export function useCloudPair(opts: { runtime?: 'sandbox' | 'process'; background?: boolean } = {}): CloudPair {
  let cloud: TestServer;
  let self: TestServer;
  let cloudProbe: ProbeState;
  let selfProbe: ProbeState;
  let cloudOwner: TestUser;
  let team: TestOrg;
  let otherOrg: TestUser;
  let dns: DnsStub;
  const SECRET = `s3cr3t-${randomBytes(8).toString('hex')}`;
  const logged: string[] = [];
  const sink = () => createLogger('trace', new Writable({ write: (chunk, _enc, cb) => (logged.push(String(chunk)), cb()) }));

  /**
   * A local project "Shop" of the team, set up through the API with config, env (one secret: SECRET),
   * a domain, a route rule, resources and a clone credential, each step checked. Answers its record.
   */
  async function shopProject(owner: TestUser = team.owner): Promise<{ id: string; location: string } & Record<string, any>> {
    const api = self.api(owner.token);
    const created = await api.post('/api/projects', { name: 'Shop', gitOwner: 'acme', gitRepo: 'shop', gitBranch: 'main', buildCommand: 'npm run build' });
    assert.equal(created.status, 201);
    const projectId = created.body.data.id;
    const env = await api.patch(`/api/projects/${projectId}/env`, {
      environment: 'production',
      upserts: [
        { key: 'API_SECRET', value: SECRET, isSecret: true },
        { key: 'PUBLIC_NAME', value: 'shop', isSecret: false },
      ],
      deletes: [],
    });
    assert.equal(env.status, 200, env.text);
    assert.equal((await api.post(`/api/projects/${projectId}/connect`, { domain: `shop-${randomBytes(3).toString('hex')}.example.com` })).status, 200);
    const rule = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'rate-limit', path: '/api', limit: 10, windowSeconds: 60 });
    assert.equal(rule.status, 201, rule.text);
    assert.equal((await api.patch(`/api/projects/${projectId}/resources`, { production: { cpuCores: 2, memoryMb: 1024 } })).status, 200);
    assert.equal((await api.patch(`/api/projects/${projectId}/clone-token`, { token: 'ghp_clonetoken', username: 'bot' })).status, 200);
    return created.body.data;
  }

  /** An unrelated project of the cloud org that already holds `id` there (so a transfer of `id` must pick another). */
  async function squatOnCloud(id: string): Promise<void> {
    const now = new Date().toISOString();
    await cloud.ctx.db
      .insertInto('projects')
      .values({
        id, orgId: cloudOwner.orgId, name: 'squatter', slug: `squat-${randomBytes(3).toString('hex')}`, status: 'enabled', location: 'local',
        framework: null, installCommand: null, buildCommand: null, startCommand: null, outputDirectory: null, rootDirectory: null, port: 3000,
        packageManager: null, runtime: null, nodeVersion: null, sourceType: 'none', gitProvider: null, gitOwner: null, gitRepo: null, gitBranch: null,
        localPath: null, sleepMode: 'always_on', autoDeploy: 0, webhookDomain: null, webhookId: null, resources: '{}', createdAt: now, updatedAt: now,
      })
      .execute();
  }

  /** A `shopProject` moved to the cloud: its local id and its cloud copy's. */
  async function cloudShop(owner: TestUser = team.owner): Promise<{ projectId: string; cloudId: string }> {
    const p = await shopProject(owner);
    const t = await self.api(owner.token).post(`/api/projects/${p.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    return { projectId: p.id, cloudId: t.body.data.cloudProjectId };
  }

  /** Changes made on a cloud copy by the cloud org itself: renamed "Shop Cloud", and env ADDED_ON_CLOUD added. */
  async function changeOnCloud(cloudId: string): Promise<void> {
    const api = cloud.api(cloudOwner.token);
    const renamed = await api.patch(`/api/projects/${cloudId}`, { name: 'Shop Cloud' });
    assert.equal(renamed.status, 200, renamed.text);
    const env = await api.patch(`/api/projects/${cloudId}/env`, { environment: 'production', upserts: [{ key: 'ADDED_ON_CLOUD', value: 'yes', isSecret: false }], deletes: [] });
    assert.equal(env.status, 200, env.text);
  }
  before(async () => {
    cloudProbe = probeState();
    selfProbe = probeState();
    dns = await startDnsStub();
    // The servers log at the most verbose level, request logging on: tests look for secrets in `logged`.
    const more = { logLevel: 'trace', ...(opts.background ? { background: true } : {}) };
    const runtime: Record<string, string> = opts.runtime ? { runtime: opts.runtime } : {};
    cloud = await startTestServer({ ...more, flags: { mode: 'cloud', ...runtime }, env: { BERTH_DNS_SERVERS: dns.server }, build: { modules: [probeModule(cloudProbe)], logger: sink() } });
    cloudOwner = await createUser(cloud);
    self = await startTestServer({
      ...more,
      flags: runtime,
      env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token },
      build: { modules: [probeModule(selfProbe)], logger: sink() },
    });
    team = await createTeam(self);
    otherOrg = await createUser(self);
  });
  after(async () => {
    await self?.close();
    await cloud?.close().catch(() => {});
    await dns?.close();
  });

  return {
    get cloud() { return cloud; },
    get self() { return self; },
    get cloudProbe() { return cloudProbe; },
    get selfProbe() { return selfProbe; },
    get cloudOwner() { return cloudOwner; },
    get team() { return team; },
    get otherOrg() { return otherOrg; },
    get dns() { return dns; },
    SECRET,
    logged,
    shopProject,
    squatOnCloud,
    cloudShop,
    changeOnCloud,
  };
}
