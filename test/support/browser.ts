import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestServer, type TestServer, type TestServerOptions } from './harness.js';
import type { TestUser } from './factories.js';
import { startLoopbackSocks } from './loopback-socks.js';

/** Debian's Chromium (`.ci/run` installs it); BERTH_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.BERTH_CHROMIUM || '/usr/bin/chromium';
/** The built dashboard the test servers serve (BERTH_DASHBOARD_DIR, else the package's dist/web). */
export const DASHBOARD_DIR = path.resolve(process.env.BERTH_DASHBOARD_DIR || new URL('../../dist/web', import.meta.url).pathname);

/**
 * The `{ skip }` option of a browser suite: the reason (printed once) when Chromium or the built
 * dashboard is missing. On CI (`CI=true`) a missing part fails the suite instead: CI installs both.
 */
export function browserSuite(name: string): { skip: string | false } {
  const missing = !existsSync(CHROMIUM)
    ? `Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`
    : !existsSync(path.join(DASHBOARD_DIR, 'index.html'))
      ? `the dashboard is not built in ${DASHBOARD_DIR} (npm run build:web)`
      : null;
  if (!missing) return { skip: false };
  if (process.env.CI === 'true') throw new Error(`${name}: ${missing}`);
  console.log(`# ${name}: skipping the browser tests: ${missing}`);
  return { skip: missing };
}

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'];
const NETNS_LAUNCHER = fileURLToPath(new URL('./chromium-netns.mjs', import.meta.url));
/** The SOCKS port inside Chromium's namespace (its own, so any fixed port is free). */
const NETNS_PROXY_PORT = 1080;

/**
 * Headless Chromium with an empty profile (a fresh temporary one per launch), in a network namespace
 * of its own where the host's interface changes cannot fail its requests with ERR_NETWORK_CHANGED
 * (test/support/chromium-netns.mjs says why and how). It reaches this machine's loopback, and nothing
 * else, through a SOCKS5 proxy. Where namespaces cannot be made (not root), Chromium runs as it is.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!canUnshareNet()) return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-chromium-'));
  const socket = path.join(dir, 'socks');
  const proxy = await startLoopbackSocks(socket);
  const cleanUp = async () => {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const browser = await chromium.launch({
      executablePath: NETNS_LAUNCHER,
      headless: true,
      // <-loopback: loopback goes through the proxy too (Chromium sends it direct by default).
      args: [...CHROMIUM_ARGS, `--proxy-server=socks5://127.0.0.1:${NETNS_PROXY_PORT}`, '--proxy-bypass-list=<-loopback>'],
      env: {
        ...process.env,
        PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        BERTH_NETNS_CHROMIUM: CHROMIUM,
        BERTH_NETNS_SOCKET: socket,
        BERTH_NETNS_PORT: String(NETNS_PROXY_PORT),
      },
    });
    browser.once('disconnected', () => void cleanUp());
    return browser;
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

let unshareWorks: boolean | undefined;
function canUnshareNet(): boolean {
  unshareWorks ??= spawnSync('unshare', ['--net', '--', 'true'], { stdio: 'ignore' }).status === 0;
  return unshareWorks;
}

/** A real server that serves the dashboard (open sign-up, as every harness server). */
export function startDashboardServer(opts: TestServerOptions = {}): Promise<TestServer> {
  return startTestServer({ ...opts, env: { BERTH_DASHBOARD_DIR: DASHBOARD_DIR, ...opts.env } });
}

/** A suite's dashboard server and browser: valid inside its tests and hooks, once started. */
export interface Dashboard {
  readonly server: TestServer;
  readonly browser: Browser;
}

/**
 * Starts a dashboard server and a browser before the enclosing describe's tests (and before the
 * hooks it registers after this call) and closes both after them. `opts` may be a function, called
 * in that hook, for options known only then.
 */
export function useDashboard(opts: TestServerOptions | (() => TestServerOptions | Promise<TestServerOptions>) = {}): Dashboard {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  before(async () => {
    const options = typeof opts === 'function' ? await opts() : opts;
    [server, browser] = await Promise.all([startDashboardServer(options), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`the dashboard ${what} is not started (useDashboard's before hook has not run)`);
    return v;
  };
  return {
    get server() {
      return started(server, 'server');
    },
    get browser() {
      return started(browser, 'browser');
    },
  };
}

export interface ViewOptions {
  /** 375 for a phone; 1280 by default. */
  width?: number;
  colorScheme?: 'light' | 'dark';
}

/** A fresh browser context (no cookies) on the server's origin, and its page. */
export async function openPage(browser: Browser, server: TestServer, view: ViewOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
  const width = view.width ?? 1280;
  const context = await browser.newContext({ baseURL: server.url, viewport: { width, height: width < 600 ? 780 : 860 }, colorScheme: view.colorScheme ?? 'light' });
  // A bound, not a measure: on a CPU-bound CI machine a sign-in and the projects page once took over 15 s.
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  // A page error (an exception the app did not catch) fails the test that caused it.
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  (page as Page & { berthErrors: string[] }).berthErrors = errors;
  // What the page asked for and did not get: said when a wait for the page fails (pageState).
  const notes: string[] = [];
  const note = (line: string) => {
    notes.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
    if (notes.length > 40) notes.shift();
  };
  page.on('requestfailed', (r) => note(`request failed: ${r.method()} ${r.url()} (${r.failure()?.errorText ?? '?'})`));
  page.on('response', (r) => {
    if (r.status() >= 400) note(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') note(`console error: ${m.text()}`);
  });
  (page as Page & { berthNotes: string[] }).berthNotes = notes;
  return { context, page };
}

/**
 * What a page shows and what it failed to load: for the error of a wait that timed out (a sign-in
 * form that never appeared under a loaded machine says here whether its script came, and how).
 */
export async function pageState(page: Page): Promise<string> {
  const text = await page
    .evaluate(() => document.body?.innerText ?? '(no body)')
    .then((t) => t.replace(/\s+/g, ' ').slice(0, 400), (e: Error) => `(unreadable: ${e.message})`);
  const notes = (page as Page & { berthNotes?: string[] }).berthNotes ?? [];
  return [`page ${page.url()} shows: ${text}`, ...notes.map((n) => `  ${n}`), ...pageErrors(page).map((e) => `  page error: ${e}`)].join('\n');
}

/** The uncaught exceptions a page has seen (none, in a passing test). */
export function pageErrors(page: Page): string[] {
  return (page as Page & { berthErrors?: string[] }).berthErrors ?? [];
}

/** `step`, or its error with what the page shows then (`pageState`): for the waits a failure is hard to read from. */
export async function orPageState<T>(page: Page, step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${await pageState(page)}`, { cause: e });
  }
}

/** Signs in through the sign-in form and waits for the projects page. */
export async function signIn(page: Page, user: Pick<TestUser, 'email' | 'password'>): Promise<void> {
  await page.goto('/login');
  await orPageState(page, page.getByLabel('Email').fill(user.email));
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
}

/** The page is readable at its width: nothing makes the document scroll sideways. */
export async function assertFitsWidth(page: Page): Promise<void> {
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  assert.ok(scroll <= client + 1, `the page scrolls sideways at ${client} px (content is ${scroll} px wide): ${page.url()}`);
}

/**
 * Saves a screenshot as `<BERTH_SCREENSHOTS>/<name>.png` when BERTH_SCREENSHOTS is set (how
 * docs/dashboard/ is made: `BERTH_SCREENSHOTS=docs/dashboard npm test -- test/web`); else nothing.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.BERTH_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: false });
}
