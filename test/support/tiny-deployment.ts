import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { createUser, type TestUser } from './factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from './harness.js';
import { edgeRequest, type EdgeAnswer, type HttpClient } from './http.js';
import { waitForDeployment } from './wait.js';

/**
 * The end-to-end suites' shared start (test/deployments/e2e-*.test.ts): a server with its runtime
 * and edge, and a real tiny Node app (no dependencies, `test/runtime/app-fixture.ts`) in a local
 * folder, as project "Tiny App" with a variable and a secret, deployed once and ready before the
 * first test. Each suite gets its own server, data folder and app, so no suite depends on another's.
 */
export interface TinyDeployment {
  /** The secret variable `API_KEY` (the app and its build print it: it must come out redacted). */
  readonly secret: string;
  readonly server: TestServer;
  readonly owner: TestUser;
  /** The owner's API client. */
  readonly api: HttpClient;
  readonly projectId: string;
  readonly slug: string;
  /** `<data-dir>` of the server (volumes, logs). */
  readonly dataDir: string;
  /** The app's local folder (rewrite it with `writeTinyApp` for a new release). */
  readonly appDir: string;
  /** The first deployment as `POST /api/deployments` answered it, and as it settled. */
  readonly first: { queued: any; settled: any };
  edgePort(): number;
  /** A request to the edge with a given Host header (fetch cannot set Host). */
  edge(host: string, pathName?: string, opts?: { method?: string; body?: string }): Promise<EdgeAnswer>;
  /** A new deployment of the project, answered `queued`. */
  deploy(): Promise<any>;
  /** The deployment once it settled (ready, failed, cancelled...). */
  settle(id: string, timeoutMs?: number): Promise<any>;
  /** Closes the server (its apps stop with it); `boot` starts it again on the same data. */
  stop(): Promise<void>;
  boot(): Promise<void>;
}

/**
 * Registers the suite's before/after hooks; the answer's fields are readable once `before` has run.
 * With `customDomain`, the domain is connected to the project too, after the first deployment.
 */
export function useTinyDeployment(opts: { customDomain?: string } = {}): TinyDeployment {
  const secret = 'sk-live-' + randomBytes(12).toString('hex');
  const secretKey = randomBytes(32).toString('base64');
  let root: string | undefined;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let server: TestServer | undefined;
  let owner: TestUser | undefined;
  let api: HttpClient | undefined;
  let project: { id: string; slug: string } | undefined;
  let first: { queued: any; settled: any } | undefined;

  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`the tiny deployment's ${what} is not there (useTinyDeployment's before hook has not run)`);
    return v;
  };
  const dirs = () => {
    const r = started(root, 'folder');
    return { root: r, dataDir: path.join(r, 'data'), appDir: path.join(r, 'local', 'tiny') };
  };
  const boot = async () => {
    const { root: r, dataDir } = dirs();
    const s = await startTestServer({
      background: true,
      dataDir,
      databaseUrl: pg?.url,
      env: { BERTH_SECRET_KEY: secretKey, BERTH_LOCAL_ROOTS: path.join(r, 'local'), BERTH_EDGE_PORT: '0' },
    });
    await getRuntime(s.ctx).restored;
    server = s;
    if (owner) api = s.api(owner.token);
  };
  const edgePort = () => getRuntime(started(server, 'server').ctx).edgePort();
  const deploy = async () => {
    const res = await started(api, 'API client').post('/api/deployments', { projectId: started(project, 'project').id });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.status, 'queued');
    return res.body.data;
  };
  const settle = (id: string, timeoutMs = 30000) => waitForDeployment(started(api, 'API client'), id, timeoutMs);

  before(async () => {
    process.env.BERTH_SLEEP_IDLE_SECONDS = '1';
    process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
    process.env.BERTH_STOP_GRACE_SECONDS = '2';
    root = tempDir('berth-e2e-');
    const { dataDir, appDir } = dirs();
    mkdirSync(dataDir, { recursive: true });
    if (usingPostgres()) pg = await freshPostgresDatabase();
    writeTinyApp(appDir, { version: 'v1', printEnv: 'API_KEY' });
    // The build prints the secret (it must come out redacted) and writes an artifact.
    writeFileSync(path.join(appDir, 'build.js'), "console.log('building with key ' + process.env.API_KEY); require('fs').writeFileSync('built.txt', 'ok');\n");
    await boot();
    owner = await createUser(server!);
    api = server!.api(owner.token);
    const created = await api.post('/api/projects', { name: 'Tiny App', buildCommand: 'node build.js', startCommand: 'npm start' });
    assert.equal(created.status, 201, created.text);
    project = { id: created.body.data.id, slug: created.body.data.slug };
    // The local-folder source (what `POST /api/projects/import` records).
    await server!.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', project.id).execute();
    const env = await api.patch(`/api/projects/${project.id}/env`, {
      environment: 'production',
      upserts: [
        { key: 'GREETING', value: 'hi there', isSecret: false },
        { key: 'API_KEY', value: secret, isSecret: true },
      ],
      deletes: [],
    });
    assert.equal(env.status, 200, env.text);
    const queued = await deploy();
    first = { queued, settled: await settle(queued.id) };
    if (opts.customDomain) {
      const c = await api.post(`/api/projects/${project.id}/connect`, { domain: opts.customDomain });
      assert.ok(c.status === 200 || c.status === 201, c.text);
    }
  });

  after(async () => {
    await server?.close();
    await pg?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  return {
    secret,
    get server() {
      return started(server, 'server');
    },
    get owner() {
      return started(owner, 'owner');
    },
    get api() {
      return started(api, 'API client');
    },
    get projectId() {
      return started(project, 'project').id;
    },
    get slug() {
      return started(project, 'project').slug;
    },
    get dataDir() {
      return dirs().dataDir;
    },
    get appDir() {
      return dirs().appDir;
    },
    get first() {
      return started(first, 'first deployment');
    },
    edgePort,
    edge: (host, pathName = '/', opts = {}) => edgeRequest(edgePort(), host, pathName, opts),
    deploy,
    settle,
    stop: async () => {
      await started(server, 'server').app.close();
    },
    boot,
  };
}
