import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { openPage, useDashboard, type Dashboard, type ViewOptions } from './browser.js';
import { startDnsStub, type DnsStub } from './dns-stub.js';
import { createUser, type TestProject, type TestUser } from './factories.js';
import type { HttpClient } from './http.js';

/**
 * The project settings suites' shared start (test/web/project-settings-*.test.ts): a dashboard
 * server whose domains are verified by their TXT record through a stub resolver (the cloud default;
 * self-hosted verifies at once unless told), a browser and one signed-up user. Each case makes its
 * own project; nothing here is changed by a case except the stub's TXT records, which a case sets
 * only for its own domain names.
 */
export interface ProjectSettingsSuite {
  readonly dash: Dashboard;
  readonly dns: DnsStub;
  readonly user: TestUser;
  /** The user's API client. */
  api(): HttpClient;
  /** A signed-in page (the session cookie from the sign-in route: the sign-in form has its own suite). */
  open(view?: ViewOptions): Promise<{ context: BrowserContext; page: Page }>;
  /** The project page at `path`, once its own heading shows. */
  visit(page: Page, project: TestProject, path: string, heading: string): Promise<void>;
  /** Presses Tab until `target` has the focus (the keyboard's own way there), at most `max` times. */
  tabTo(page: Page, target: Locator, max?: number): Promise<void>;
  /** Waits for a toast with `text`. */
  toast(page: Page, text: string | RegExp): Promise<void>;
}

/** Registers the suite's before and after hooks; call it inside the describe. */
export function useProjectSettings(): ProjectSettingsSuite {
  let dns: DnsStub | undefined;
  let user: TestUser | undefined;
  const dash = useDashboard(async () => {
    dns = await startDnsStub();
    return { env: { BERTH_DOMAIN_VERIFICATION: 'dns', BERTH_DNS_SERVERS: dns.server } };
  });
  before(async () => {
    user = await createUser(dash.server);
  });
  after(async () => {
    await dns?.close();
  });
  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`the project settings ${what} is not started (useProjectSettings' before hook has not run)`);
    return v;
  };
  const suite: ProjectSettingsSuite = {
    dash,
    get dns() {
      return started(dns, 'DNS stub');
    },
    get user() {
      return started(user, 'user');
    },
    api: () => dash.server.api(suite.user.token),
    async open(view = {}) {
      const opened = await openPage(dash.browser, dash.server, view);
      const r = await opened.page.request.post('/api/auth/login', { data: { email: suite.user.email, password: suite.user.password }, headers: { origin: dash.server.url } });
      assert.equal(r.status(), 200, await r.text());
      return opened;
    },
    async visit(page, project, path, heading) {
      await page.goto(`/projects/${project.id}${path}`);
      await page.getByRole('heading', { name: heading, level: 2 }).first().waitFor({ timeout: 15_000 });
    },
    async tabTo(page, target, max = 80) {
      for (let i = 0; i < max; i++) {
        await page.keyboard.press('Tab');
        if (await target.evaluate((el) => el === document.activeElement)) return;
      }
      assert.fail(`Tab never reached ${target}`);
    },
    toast: (page, text) => page.locator('.toast').filter({ hasText: text }).first().waitFor({ timeout: 10_000 }),
  };
  return suite;
}
