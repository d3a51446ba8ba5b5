/**
 * Security review (issue 33 point 5): any account could make the server, as root, create folders and
 * write backups almost anywhere (`/root`, `/etc`, `/proc/self/cwd`, the data dir's own folders)
 * through a local backup destination, following links. Local destinations now lie under
 * BERTH_LOCAL_BACKUP_ROOT (default `<data-dir>/backups`); anything else, or a path that leaves the root
 * through `..` or a link, is 400 `path`, and folders are made without following links.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

describe('local backup destinations stay under BERTH_LOCAL_BACKUP_ROOT', () => {
  let server: TestServer;
  let user: TestUser;
  let root: string;
  let outside: string;

  before(async () => {
    outside = tempDir('berth-outside-');
    // The default root: the harness's override is cleared.
    server = await startTestServer({ env: { BERTH_LOCAL_BACKUP_ROOT: '' } });
    root = path.join(server.dataDir, 'backups');
    // A restricted member makes its own team org: any account can try this.
    user = await createUser(server);
  });

  after(async () => {
    await server?.close();
    rmSync(outside, { recursive: true, force: true });
  });

  const create = (p: string) => server.api(user.token).post('/api/backup-destinations', { name: 'disk', kind: 'local', path: p });

  it('refuses folders outside the root with 400 naming path, and makes nothing there', async () => {
    for (const p of ['/root/berth-x', '/etc/berth-x', '/proc/self/cwd', path.join(server.dataDir, 'volumes'), path.join(server.dataDir, 'uploads', 'x'), path.join(outside, 'x'), `${root}-sibling`]) {
      const res = await create(p);
      assert.equal(res.status, 400, `${p}: ${res.text}`);
      assert.equal(res.body.error.field, 'path', p);
    }
    assert.equal(existsSync('/etc/berth-x') || existsSync('/root/berth-x') || existsSync(path.join(outside, 'x')), false);
  });

  it('refuses a way out through ".."', async () => {
    const res = await create(path.join(root, 'a') + '/../../secret-key');
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'path');
  });

  it('refuses a way out through a link inside the root, on save and when the folder is used', async () => {
    mkdirSync(root, { recursive: true });
    symlinkSync(outside, path.join(root, 'out'));
    const res = await create(path.join(root, 'out', 'x'));
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.field, 'path');
    assert.match(res.body.error.message, /link/);

    // Saved while it was a folder, swapped for a link afterwards: the probe refuses it and writes nothing.
    mkdirSync(path.join(root, 'later'));
    const ok = await create(path.join(root, 'later', 'y'));
    assert.equal(ok.status, 201, ok.text);
    rmSync(path.join(root, 'later'), { recursive: true });
    symlinkSync(outside, path.join(root, 'later'));
    const probe = await server.api(user.token).post(`/api/backup-destinations/${ok.body.data.id}/test`);
    assert.equal(probe.status, 400, probe.text);
    assert.equal(probe.body.error.field, 'path');
    assert.deepEqual(readdirSync(outside), []);
  });

  it('accepts a folder under the root and makes it (0700) when first used', async () => {
    const p = path.join(root, 'team-a', 'nightly');
    const res = await create(p);
    assert.equal(res.status, 201, res.text);
    const probe = await server.api(user.token).post(`/api/backup-destinations/${res.body.data.id}/test`);
    assert.equal(probe.status, 200, probe.text);
    assert.equal(probe.body.data.ok, true, probe.text);
    assert.ok(existsSync(p));
  });
});
