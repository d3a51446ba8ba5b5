import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser, type TestUser } from '../support/factories.js';

/** The frame every page shares: what a first visit costs, the theme, the menu on a phone, the keyboard. */
describe('the dashboard frame', browserSuite('the dashboard frame'), () => {
  const dash = useDashboard();
  let user: TestUser;
  before(async () => {
    user = await createUser(dash.server);
  });

  it('a first visit transfers under 250 KB compressed before the sign-in page shows', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    const sizes: Array<Promise<number>> = [];
    page.on('requestfinished', (req) => {
      if (['document', 'script', 'stylesheet'].includes(req.resourceType())) sizes.push(req.sizes().then((s) => s.responseBodySize + s.responseHeadersSize));
    });
    await page.goto('/');
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.waitForLoadState('networkidle');
    const total = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
    assert.ok(sizes.length >= 3, `${sizes.length} documents, scripts and stylesheets`);
    assert.ok(total < 250 * 1024, `the first page transferred ${(total / 1024).toFixed(0)} KB`);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("the theme follows the system's, and the toggle pins light or dark across reloads", async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { colorScheme: 'dark' });
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const dark = (rgb: string) => {
      const [r, g, b] = rgb.match(/\d+/g)!.map(Number);
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b! < 80;
    };
    await signIn(page, user);
    assert.ok(dark(await background()), 'dark system theme: dark page');
    await screenshot(page, 'projects-dark');
    const toggle = page.getByRole('button', { name: /^Theme: / });
    await toggle.click(); // system -> light
    assert.ok(!dark(await background()), 'pinned light');
    await page.reload();
    await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
    assert.ok(!dark(await background()), 'light survives a reload');
    await page.getByRole('button', { name: /^Theme: light/ }).click(); // light -> dark
    assert.ok(dark(await background()), 'pinned dark');
    await context.close();
  });

  it('at 375 px the navigation folds into a menu that works with the keyboard alone', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(page, user);
    await assertFitsWidth(page);
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.equal(await nav.isVisible(), false, 'folded');
    await page.getByRole('button', { name: 'Menu' }).focus();
    await page.keyboard.press('Enter');
    await nav.waitFor({ state: 'visible' });
    await screenshot(page, 'menu-375');
    await nav.getByRole('link', { name: 'Access tokens' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL('**/account/tokens');
    assert.equal(await nav.isVisible(), false, 'folds again after choosing');
    await assertFitsWidth(page);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the first Tab reaches "Skip to content", which moves focus to the page', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    assert.equal(await skip.evaluate((el) => el === document.activeElement), true);
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
    await context.close();
  });

  it('an unknown path shows "Page not found" with a way home', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto('/no/such/page');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    assert.ok(await page.getByRole('link', { name: /projects/i }).isVisible());
    await context.close();
  });
});
