import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { projectEnv } from '../../src/modules/projects/index.js';
import { browserSuite, pageErrors } from '../support/browser.js';
import { createProject } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { useProjectSettings } from '../support/project-settings.js';
import { waitFor } from '../support/wait.js';

/**
 * The project's environment variables page against a real server: secrets masked and never sent
 * back, the merge PATCH, errors at the row, a conflicting save, pasted .env lines, Redeploy, and the
 * environment selector. Every case makes its own project.
 */
describe('the environment variables page', browserSuite('the environment variables page'), () => {
  const s = useProjectSettings();
  const { dash, api, open, visit, toast } = s;

  it('a secret variable stays masked after saving and reloading, and the plain one shows', async () => {
    const project = await createProject(dash.server, s.user);
    const secret = `s3cr3t-${Math.random().toString(36).slice(2)}-value`;
    const { context, page } = await open();
    // Every API answer the page receives, to search for the secret afterwards.
    const bodies: Array<Promise<string>> = [];
    page.on('response', (res) => {
      if (new URL(res.url()).pathname.startsWith('/api/')) bodies.push(res.text().catch(() => ''));
    });
    await visit(page, project, '/env', 'Environment variables');
    await page.getByText('No variables in production yet').waitFor();
    await page.getByText('Changes apply on the next deploy of production.').waitFor();

    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('PLAIN_KEY');
    await page.getByLabel('Value of PLAIN_KEY', { exact: true }).fill('plain-value-123');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('SECRET_KEY');
    await page.getByLabel('SECRET_KEY is secret', { exact: true }).check();
    const secretInput = page.getByLabel('Value of SECRET_KEY', { exact: true });
    assert.equal(await secretInput.getAttribute('type'), 'password', 'a secret is typed unseen');
    await secretInput.fill(secret);
    await page.getByText('2 unsaved changes').waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 2 changes to production');
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).waitFor();

    const listed = await api().get(`/api/projects/${project.id}/env`);
    assert.deepEqual(
      listed.body.data.map((v: { key: string; value: string; isSecret: boolean }) => [v.key, v.value, v.isSecret]),
      [
        ['PLAIN_KEY', 'plain-value-123', false],
        ['SECRET_KEY', '********', true],
      ],
    );
    assert.equal((await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.SECRET_KEY, secret, 'stored as typed');

    await page.reload();
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).waitFor();
    assert.equal(await page.getByLabel('Value of PLAIN_KEY', { exact: true }).inputValue(), 'plain-value-123');
    const secretRow = page.getByRole('row').filter({ has: page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }) });
    assert.match(await secretRow.innerText(), /••••••••/);
    assert.equal(await page.getByLabel('SECRET_KEY is secret', { exact: true }).isChecked(), true);
    await page.waitForLoadState('networkidle');
    assert.ok(!(await page.content()).includes(secret), "the secret is not in the page's HTML");
    const seen = await Promise.all(bodies);
    assert.ok(seen.length >= 3, `${seen.length} API answers seen`);
    assert.ok(!seen.some((b) => b.includes(secret)), 'no API answer the page received holds the secret');

    // Replace: a new value for the secret, typed unseen; the old one was never shown.
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).click();
    const fresh = page.getByLabel('New value of SECRET_KEY', { exact: true });
    assert.equal(await fresh.inputValue(), '');
    await fresh.fill(`${secret}-2`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 1 change to production');
    await waitFor(async () => (await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.SECRET_KEY === `${secret}-2`, 'the replaced secret');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a key the API refuses shows its error at that variable, and the draft is kept to fix it', async () => {
    const project = await createProject(dash.server, s.user);
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('GOOD_KEY');
    await page.getByLabel('Value of GOOD_KEY', { exact: true }).fill('1');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('9-BAD');
    await page.getByLabel('Value of 9-BAD', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Save changes' }).click();

    const bad = page.getByLabel('Key of 9-BAD', { exact: true });
    const alert = page.getByRole('row').filter({ has: bad }).getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /upserts\.1\.key must match/);
    assert.equal(await bad.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('Key of GOOD_KEY', { exact: true }).getAttribute('aria-invalid'), null, 'only the refused row is marked');
    await page.getByText('Nothing was saved').waitFor();
    assert.deepEqual((await api().get(`/api/projects/${project.id}/env`)).body.data, [], 'nothing written');

    // The draft came back (optimistic rows rolled back): fix the key and save.
    await bad.fill('NINE_OK');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 2 changes');
    const keys = (await api().get(`/api/projects/${project.id}/env`)).body.data.map((v: { key: string }) => v.key);
    assert.deepEqual(keys, ['GOOD_KEY', 'NINE_OK']);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a save over variables changed elsewhere meanwhile is refused, and the page offers to reload them', async () => {
    const project = await createProject(dash.server, s.user);
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'SHARED', value: 'v1' }] });
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByLabel('Value of SHARED', { exact: true }).waitFor();
    // Someone else writes while this page holds its copy.
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'SHARED', value: 'theirs' }] });
    await page.getByLabel('Value of SHARED', { exact: true }).fill('mine');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('changed since this page read them').waitFor();
    assert.equal((await api().get(`/api/projects/${project.id}/env`)).body.data[0].value, 'theirs', 'their change survives');
    assert.equal(await page.getByLabel('Value of SHARED', { exact: true }).inputValue(), 'mine', 'the draft is kept');
    await page.getByRole('button', { name: 'Reload them' }).click();
    await waitFor(async () => (await page.getByLabel('Value of SHARED', { exact: true }).inputValue()) === 'theirs', 'the reloaded value');
    assert.equal(await page.getByText('changed since this page read them').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('pasted .env lines become rows, a removal is saved with them, and Redeploy queues a deployment', async () => {
    const project = await createProject(dash.server, s.user, { localPath: tempDir('berth-app-') });
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'OLD_KEY', value: 'old' }, { key: 'API_TOKEN', value: 'tok-1', isSecret: true }] });
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByRole('button', { name: 'Remove OLD_KEY' }).click();
    await page.getByText('Removed when you save').waitFor();
    await page.getByRole('button', { name: 'Paste .env' }).click();
    await page.getByLabel('.env lines').fill('# from my laptop\nexport DATABASE_URL="postgres://db:5432/app"\nLOG_LEVEL=debug # noisy\n\nAPI_TOKEN=tok-2');
    await page.getByRole('button', { name: 'Add to the table' }).click();
    await page.getByLabel('Value of DATABASE_URL', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('Value of LOG_LEVEL', { exact: true }).inputValue(), 'debug');
    assert.equal(await page.getByLabel('New value of API_TOKEN', { exact: true }).inputValue(), 'tok-2', 'a pasted secret replaces its value');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 4 changes');
    const vars = (await api().get(`/api/projects/${project.id}/env`)).body.data as Array<{ key: string; value: string; isSecret: boolean }>;
    assert.deepEqual(
      vars.map((v) => [v.key, v.value, v.isSecret]),
      [
        ['API_TOKEN', '********', true],
        ['DATABASE_URL', 'postgres://db:5432/app', false],
        ['LOG_LEVEL', 'debug', false],
      ],
    );
    assert.equal((await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.API_TOKEN, 'tok-2');

    await page.getByRole('button', { name: 'Redeploy now' }).click();
    const follow = page.getByRole('link', { name: /^Follow deployment / });
    await follow.waitFor();
    const depId = (await follow.getAttribute('href'))!.split('/').pop()!;
    const dep = await api().get(`/api/deployments/${depId}`);
    assert.equal(dep.status, 200, dep.text);
    assert.equal(dep.body.data.projectId, project.id);
    assert.equal(dep.body.data.environment, 'production');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the environment selector edits a preview environment apart from production', async () => {
    const project = await createProject(dash.server, s.user);
    assert.equal((await api().post(`/api/projects/${project.id}/environments`, { name: 'staging', branch: 'staging' })).status, 201);
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByLabel('Environment', { exact: true }).selectOption('staging');
    await page.getByText('No variables in staging yet').waitFor();
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('ONLY_STAGING');
    await page.getByLabel('Value of ONLY_STAGING', { exact: true }).fill('yes');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 1 change to staging');
    assert.equal((await api().get(`/api/projects/${project.id}/env?environment=staging`)).body.data.length, 1);
    assert.equal((await api().get(`/api/projects/${project.id}/env`)).body.data.length, 0);
    await context.close();
  });
});
