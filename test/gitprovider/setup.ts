import { randomBytes } from 'node:crypto';
import { FakeGithub, appKeyPair, makeFakeGh } from '../support/fake-github.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/harness.js';
import type { HttpClient } from '../support/http.js';
import { createUser, type TestOrg } from '../support/factories.js';

export const WEBHOOK_SECRET = "It's a Secret to Everybody";

export interface GitWorld {
  fake: FakeGithub;
  server: TestServer;
  gh: ReturnType<typeof makeFakeGh>;
  close(): Promise<void>;
}

/**
 * A fake GitHub (App + OAuth app) and a Berth server pointed at it through the contract's env vars.
 * `app: false` leaves the App unconfigured; `oauth: false` the OAuth app; `webhookSecret: null` the secret.
 */
export async function startGitWorld(opts: { mode?: 'self-hosted' | 'cloud'; app?: boolean; oauth?: boolean; webhookSecret?: string | null; server?: TestServerOptions } = {}): Promise<GitWorld> {
  const keys = appKeyPair();
  const clientId = `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = randomBytes(20).toString('hex');
  const fake = await new FakeGithub({ appId: '4242', publicKey: keys.publicKey, clientId, clientSecret }).start();
  const gh = makeFakeGh();
  const env: Record<string, string> = {
    BERTH_GITHUB_API_URL: fake.apiUrl,
    BERTH_GITHUB_WEB_URL: fake.url,
    BERTH_GH_BIN: gh.bin,
    ...(opts.server?.env ?? {}),
  };
  if (opts.app !== false) {
    env.BERTH_GITHUB_APP_ID = '4242';
    env.BERTH_GITHUB_APP_SLUG = 'berth-test';
    env.BERTH_GITHUB_APP_PRIVATE_KEY = keys.privateKey;
  }
  if (opts.oauth !== false) {
    env.BERTH_GITHUB_CLIENT_ID = clientId;
    env.BERTH_GITHUB_CLIENT_SECRET = clientSecret;
  }
  if (opts.webhookSecret !== null) env.BERTH_GITHUB_WEBHOOK_SECRET = opts.webhookSecret ?? WEBHOOK_SECRET;
  const server = await startTestServer({ ...opts.server, env, flags: { ...(opts.server?.flags ?? {}), ...(opts.mode ? { mode: opts.mode } : {}) } });
  fake.setupUrl = `${server.url}/api/gitprovider/connect/redirect`;
  return {
    fake,
    server,
    gh,
    async close() {
      await server.close();
      await fake.close();
    },
  };
}

/** Installs the App on `login` at the fake and claims it for the caller's org through connect + redirect. */
export async function installApp(w: GitWorld, api: HttpClient, login: string, type: 'User' | 'Organization' = 'Organization'): Promise<number> {
  w.fake.account(login, type);
  const st = await api.get('/api/gitprovider/status');
  if (st.status !== 200 || !st.body.data.installUrl) throw new Error(`status: ${st.status} ${st.text}`);
  w.fake.nextInstallAccount = login;
  const page = await fetch(st.body.data.installUrl, { redirect: 'manual' });
  const back = page.headers.get('location')!;
  const res = await fetch(back, { redirect: 'manual' });
  if (res.status !== 302) throw new Error(`redirect answered ${res.status}: ${await res.text()}`);
  return Number(new URL(back).searchParams.get('installation_id'));
}

/**
 * A GitHub login no other test of the run uses (`acme-3f9a1c`), so each test owns its account,
 * repositories and installation on a shared fake GitHub.
 */
export function uniqueLogin(prefix = 'acme'): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * A team org with one user of each role, as `createTeam` makes it but without passwords: these suites
 * act through tokens only, and each test makes its own team, so no password hashing to wait for.
 */
export async function tokenTeam(server: TestServer): Promise<TestOrg> {
  const owner = await createUser(server, { team: true, noPassword: true });
  const orgId = owner.orgId;
  const [admin, member, restricted] = await Promise.all((['admin', 'member', 'restricted'] as const).map((role) => createUser(server, { orgId, role, noPassword: true })));
  return { orgId, owner, admin: admin!, member: member!, restricted: restricted! };
}
