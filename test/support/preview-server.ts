import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import type { SettledDeployment } from '../../src/modules/deployments/index.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { createUser, type TestUser } from './factories.js';
import { startTestServer, tempDir, type TestServer } from './harness.js';
import { edgeRequest, type EdgeAnswer, type HttpClient } from './http.js';
import { waitForDeployment } from './wait.js';

/**
 * The preview suites' shared start (test/deployments/previews-*.test.ts): a server with the real
 * runtime and edge, one user, every settled deployment its listeners were told of, and the uploads
 * and deployments the suites make. Each suite gets its own server.
 */
export interface PreviewServer {
  readonly server: TestServer;
  readonly owner: TestUser;
  /** The owner's API client. */
  readonly api: HttpClient;
  /** A temp folder of the suite's own. */
  readonly root: string;
  /** What the deployment-settled listeners were told, in order. */
  readonly settled: SettledDeployment[];
  edgePort(): number;
  edge(host: string, pathName?: string): Promise<EdgeAnswer>;
  /** Packs `dir` and uploads it through a folder session; answers the session id. */
  upload(dir: string): Promise<string>;
  /** The tiny app of `version`, with `/probe/<host>/<port>` (whether a TCP connection from inside its box succeeds), uploaded: a session id. */
  uploadApp(version: string): Promise<string>;
  /** Deploys (an upload when given) and waits until the deployment is done; answers its record. */
  deploy(projectId: string, environment: string, sessionId?: string): Promise<any>;
  buildLog(id: string): Promise<string[]>;
  envVars(projectId: string, environment: string): Promise<Record<string, { value: string; isSecret: boolean }>>;
}

const PROBE = `
function probe(req, res) {
  const parts = req.url.split('/').filter(Boolean);
  const sock = require('node:net').connect({ host: parts[1], port: Number(parts[2]) });
  const done = (what) => { sock.destroy(); if (!res.headersSent) res.end(what); };
  sock.once('connect', () => done('reachable'));
  sock.once('error', () => done('unreachable'));
  sock.setTimeout(1500, () => done('unreachable'));
}
`;

/** Registers the suite's before/after hooks; the answer's fields are readable once `before` has run. */
export function usePreviewServer(): PreviewServer {
  let root: string | undefined;
  let server: TestServer | undefined;
  let owner: TestUser | undefined;
  let api: HttpClient | undefined;
  const settled: SettledDeployment[] = [];

  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`the preview suite's ${what} is not there (usePreviewServer's before hook has not run)`);
    return v;
  };
  const client = () => started(api, 'API client');
  const edgePort = () => getRuntime(started(server, 'server').ctx).edgePort();

  const upload = async (dir: string) => {
    const file = `${dir}.tgz`;
    tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['.']);
    const s = await client().post('/api/projects/folder/session', { name: path.basename(dir) });
    assert.equal(s.status, 201, s.text);
    const { url, method, headers, sessionId } = s.body.data;
    const res = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
    assert.ok(res.status < 300, await res.text());
    return sessionId as string;
  };

  before(async () => {
    process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
    process.env.BERTH_STOP_GRACE_SECONDS = '2';
    process.env.BERTH_SLEEP_IDLE_SECONDS = '2';
    root = tempDir('berth-previews-');
    server = await startTestServer({
      background: true,
      // Git builds of this file fail at once (nothing listens there): only their deployment records matter.
      env: { BERTH_GITHUB_WEB_URL: 'http://127.0.0.1:9' },
      ports: { deploymentSettled: [async (_ctx, d) => void settled.push(d)] },
    });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
    api = server.api(owner.token);
  });

  after(async () => {
    await server?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  return {
    get server() {
      return started(server, 'server');
    },
    get owner() {
      return started(owner, 'owner');
    },
    get api() {
      return client();
    },
    get root() {
      return started(root, 'folder');
    },
    settled,
    edgePort,
    edge: (host, pathName = '/') => edgeRequest(edgePort(), host, pathName),
    upload,
    uploadApp(version) {
      const dir = writeTinyApp(path.join(started(root, 'folder'), version), { version });
      const file = path.join(dir, 'server.js');
      writeFileSync(file, readFileSync(file, 'utf8').replace('const server = http.createServer((req, res) => {', `${PROBE}const server = http.createServer((req, res) => {\n  if (req.url.startsWith('/probe/')) return probe(req, res);`));
      return upload(dir);
    },
    async deploy(projectId, environment, sessionId) {
      const res = await client().post('/api/deployments', { projectId, environment, ...(sessionId ? { sessionId } : {}) });
      assert.equal(res.status, 202, res.text);
      return waitForDeployment(client(), res.body.data.id, 120_000);
    },
    async buildLog(id) {
      const res = await client().get(`/api/deployments/${id}/logs`);
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((l: any) => l.line);
    },
    async envVars(projectId, environment) {
      const res = await client().get(`/api/projects/${projectId}/env?environment=${environment}`);
      assert.equal(res.status, 200, res.text);
      return Object.fromEntries(res.body.data.map((v: any) => [v.key, { value: v.value, isSecret: v.isSecret }]));
    },
  };
}
