// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * Disk limits (contract 18, issue 33 point 4) against a real server with the real runtime and real
 * loop-mounted images (BERTH_DISK_LIMITS=images; the harness turns them off for every other suite):
 * an app filling /data past diskMb gets ENOSPC while the server keeps answering; a build writing past
 * build.diskMb fails with a build-log line saying so; a larger diskMb grows the image at the next
 * deploy; a plain-folder volume moves onto its image without losing a file; a backup and a staged
 * restore of a volume on its image. Every mount and loop device made here is removed in `after`.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '20';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createDestination, createUser, type TestUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { imagesUsable, isMounted, unmountBelow, usage } from '../../src/runtime/disk-image.js';
import { waitForDeployment } from '../support/wait.js';
import { treeDigest, waitTerminal } from '../backups/helpers.js';
import { startReceiver } from '../notifications/receivers.js';

let root: string;
let server: TestServer | undefined;
let owner: TestUser;
let api: HttpClient;
let skip: string | false = false;

/** An app whose `/fill/<name>/<mb>` writes 1 MiB blocks into $DATA_DIR/<name> until done or refused. */
const APP = `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
http.createServer((req, res) => {
  const m = /^\\/fill\\/(\\w+)\\/(\\d+)$/.exec(req.url);
  if (m) {
    const block = Buffer.alloc(1024 * 1024, 1);
    const fd = fs.openSync(path.join(process.env.DATA_DIR, m[1]), 'w');
    let mb = 0, code = null;
    try { for (; mb < Number(m[2]); mb++) fs.writeSync(fd, block); fs.fsyncSync(fd); } catch (e) { code = e.code; }
    fs.closeSync(fd);
    res.end(JSON.stringify({ mb, code }));
    return;
  }
  if (req.url.startsWith('/read/')) { res.end(fs.readFileSync(path.join(process.env.DATA_DIR, req.url.slice(6)), 'utf8')); return; }
  res.end('up');
}).listen(Number(process.env.PORT));
`;

function write(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
}

async function importFolder(name: string, files: Record<string, string>, resources: Record<string, unknown>): Promise<{ id: string; slug: string }> {
  write(path.join(root, 'local', name), files);
  const res = await api.post('/api/projects/import', { path: path.join(root, 'local', name), name });
  assert.equal(res.status, 201, res.text);
  const patched = await api.patch(`/api/projects/${res.body.data.id}/resources`, resources);
  assert.equal(patched.status, 200, patched.text);
  return res.body.data;
}

async function deploy(projectId: string): Promise<any> {
  const res = await api.post('/api/deployments', { projectId });
  assert.equal(res.status, 202, res.text);
  return waitForDeployment(api, res.body.data.id, 180_000);
}

const edge = (slug: string, p: string) => edgeRequest(getRuntime(server!.ctx).edgePort(), `${slug}.localhost`, p, { timeoutMs: 60_000 });
const volumeOf = (id: string) => path.join(root, 'data', 'volumes', id, 'data');

before(async () => {
  root = tempDir('berth-disk-limits-');
  mkdirSync(path.join(root, 'local'), { recursive: true });
  const u = await imagesUsable(root);
  if (!u.ok) {
    skip = `filesystem images are not usable here: ${u.reason}`;
    return;
  }
  server = await startTestServer({ background: true, dataDir: path.join(root, 'data'), env: { BERTH_DISK_LIMITS: 'images', BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
  await getRuntime(server.ctx).restored;
  owner = await createUser(server);
  api = server.api(owner.token);
});

after(async () => {
  await server?.close();
  // Every image this suite mounted goes, with its loop device, before the folders.
  await unmountBelow(root);
  rmSync(root, { recursive: true, force: true });
});

describe('an app volume on its image', () => {
  let project: { id: string; slug: string };

  before(async () => {
    if (skip) return;
    project = await importFolder('filler', { 'server.js': APP, 'package.json': JSON.stringify({ name: 'filler', scripts: { start: 'node server.js' } }) }, { production: { diskMb: 128 } });
    // A volume with files from before disk limits: a plain folder, moved onto its image at the deploy.
    write(volumeOf(project.id), { 'kept.txt': 'from before' });
    const d = await deploy(project.id);
    assert.equal(d.status, 'ready', d.error);
  });

  test('the volume is moved onto its image without losing a file, and the app reads it', async (t) => {
    if (skip) return t.skip(skip);
    assert.equal(isMounted(volumeOf(project.id)), true);
    assert.equal((await edge(project.slug, '/read/kept.txt')).text, 'from before');
  });

  test('an app writing past diskMb gets ENOSPC, the server and the app keep answering, and info says enforced with the use', async (t) => {
    if (skip) return t.skip(skip);
    const filled = JSON.parse((await edge(project.slug, '/fill/big/400')).text);
    assert.equal(filled.code, 'ENOSPC');
    assert.ok(filled.mb < 128, `wrote ${filled.mb} MB`);
    assert.equal((await server!.api().get('/api/health')).status, 200);
    assert.equal((await edge(project.slug, '/')).text, 'up');
    const info = await api.get(`/api/projects/${project.id}/info`);
    assert.equal(info.status, 200, info.text);
    const disk = info.body.data.runtime.disk;
    assert.equal(disk.enforced, true);
    assert.equal(disk.limitMb, 128);
    assert.ok(disk.usedMb >= 100, JSON.stringify(disk));
  });

  test('a larger diskMb grows the image when the app next starts, keeping the files', async (t) => {
    if (skip) return t.skip(skip);
    const patched = await api.patch(`/api/projects/${project.id}/resources`, { production: { diskMb: 256 } });
    assert.equal(patched.status, 200, patched.text);
    // A deploy grows it at once where the server may resize a mounted ext4 (CAP_SYS_RESOURCE); without
    // that, while the old app still holds the filesystem, at the next start: a disable and enable here.
    const d = await deploy(project.id);
    assert.equal(d.status, 'ready', d.error);
    if ((await usage(volumeOf(project.id))).sizeMb < 200) {
      assert.equal((await api.post(`/api/projects/${project.id}/disable`)).status, 200);
      assert.equal((await api.post(`/api/projects/${project.id}/enable`)).status, 200);
      const { waitFor } = await import('../support/wait.js');
      await waitFor(async () => ((await edge(project.slug, '/')).text === 'up' ? true : null), 'the app to answer again', 60_000);
    }
    assert.ok((await usage(volumeOf(project.id))).sizeMb > 200);
    const more = JSON.parse((await edge(project.slug, '/fill/more/64')).text);
    assert.deepEqual(more, { mb: 64, code: null });
    assert.equal((await edge(project.slug, '/read/kept.txt')).text, 'from before');
    assert.equal((await api.get(`/api/projects/${project.id}/info`)).body.data.runtime.disk.limitMb, 256);
  });

  test('a backup of the volume on its image restores through a staged restore, the image still mounted', async (t) => {
    if (skip) return t.skip(skip);
    const vol = volumeOf(project.id);
    rmSync(path.join(vol, 'big'), { force: true });
    rmSync(path.join(vol, 'more'), { force: true });
    write(path.join(vol, 'nested'), { 'a.txt': 'a', 'b.txt': 'b' });
    const before = treeDigest(vol);
    const dest = await createDestination(server!, owner);
    const svc = await server!.ctx.db.selectFrom('services').select('id').where('projectId', '=', project.id).where('name', '=', 'data').executeTakeFirstOrThrow();
    const pol = await api.post(`/api/projects/${project.id}/backup-policies`, { destinationId: dest.id, serviceId: svc.id });
    assert.equal(pol.status, 201, pol.text);
    const started = await api.post(`/api/backup-policies/${pol.body.data.id}/run`);
    assert.ok([200, 201, 202].includes(started.status), started.text);
    const run = await waitTerminal(server!, owner.token, `/api/backup-runs/${started.body.data.runId}`, 60_000);
    assert.equal(run.status, 'succeeded', run.error);
    writeFileSync(path.join(vol, 'kept.txt'), 'changed');
    writeFileSync(path.join(vol, 'added'), 'after the backup');
    const prep = await api.post(`/api/backup-runs/${run.id}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const applied = await api.post(`/api/backup-restores/${prep.body.data.restoreId}/apply`, { confirmationToken: prep.body.data.confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const done = await waitTerminal(server!, owner.token, `/api/backup-restores/${prep.body.data.restoreId}`, 60_000);
    assert.equal(done.status, 'succeeded', done.error);
    assert.equal(isMounted(vol), true);
    const { waitFor } = await import('../support/wait.js');
    await waitFor(() => (Object.keys(treeDigest(vol)).some((n) => n.startsWith('.berth-')) ? null : true), 'the old contents to be removed', 20_000);
    assert.deepEqual(treeDigest(vol), before);
    assert.equal(readFileSync(path.join(vol, 'kept.txt'), 'utf8'), 'from before');
  });
});

test('a volume at 90% of its diskMb is disk.near_limit once (channel, runtime log, audit log); after it went below 80% it is told again', async (t) => {
  if (skip) return t.skip(skip);
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const ch = await api.post('/api/notification-channels', { name: 'disk', kind: 'webhook', url: receiver.url('/disk'), events: ['disk.near_limit'] });
  assert.equal(ch.status, 201, ch.text);
  receiver.setSecret(ch.body.data.secret);
  const project = await importFolder('nearly-full', { 'server.js': APP, 'package.json': JSON.stringify({ name: 'nearly-full', scripts: { start: 'node server.js' } }) }, { production: { diskMb: 128 } });
  const d = await deploy(project.id);
  assert.equal(d.status, 'ready', d.error);
  const watch = getRuntime(server!.ctx).health.disk;
  const told = () => receiver.got.filter((g) => g.path === '/disk');

  await watch.round();
  await server!.ctx.jobs.drain();
  assert.equal(told().length, 0, 'an empty volume is not told');
  assert.equal(JSON.parse((await edge(project.slug, '/fill/big/400')).text).code, 'ENOSPC');
  await watch.round();
  await watch.round();
  const { waitFor } = await import('../support/wait.js');
  await waitFor(() => told().length > 0, 'the channel to be told', 20_000);
  await server!.ctx.jobs.drain();
  assert.equal(told().length, 1, 'told once, not on every round');
  const note = told()[0]!;
  assert.equal(note.json.event, 'disk.near_limit');
  assert.equal(note.json.projectId, project.id);
  assert.match(note.json.subject, /^The volume of nearly-full is (9\d|100)% full$/);
  assert.match(note.json.detail, /It holds \d+ MB of its 128 MB limit \(resources\.production\.diskMb\)\. Writes past it fail/);
  assert.equal(note.signatureValid, true);
  const logs: string[] = (await api.get(`/api/projects/${project.id}/logs?limit=500`)).body.data.map((l: any) => l.line as string);
  assert.ok(logs.some((l) => /^\[berth\] the volume is \d+% full: \d+ MB of its 128 MB/.test(l)), logs.join('\n'));
  const audit = (await api.get('/api/audit?limit=200')).body.data.filter((e: any) => e.action === 'disk.near_limit' && e.resourceId === project.id);
  assert.equal(audit.length, 1);
  assert.equal(audit[0].details.limitMb, 128);
  assert.equal(audit[0].details.enforced, true);

  // Files removed: below 80% the volume is re-armed; filled again, it is told a second time.
  rmSync(path.join(volumeOf(project.id), 'big'), { force: true });
  await watch.round();
  assert.equal(JSON.parse((await edge(project.slug, '/fill/again/400')).text).code, 'ENOSPC');
  await watch.round();
  await waitFor(() => told().length === 2, 'the channel to be told again', 20_000);
});

test('a build writing past build.diskMb fails with a build-log line naming the limit, and leaves no image behind', async (t) => {
  if (skip) return t.skip(skip);
  const fill = "const fs = require('node:fs'); const b = Buffer.alloc(1024 * 1024, 1); const fd = fs.openSync('junk', 'w'); for (let i = 0; i < 400; i++) fs.writeSync(fd, b);";
  const project = await importFolder(
    'build-filler',
    { 'fill.js': fill, 'server.js': APP, 'package.json': JSON.stringify({ name: 'build-filler', scripts: { build: 'node fill.js', start: 'node server.js' } }) },
    { build: { diskMb: 128 } },
  );
  const d = await deploy(project.id);
  assert.equal(d.status, 'failed');
  const logs = await api.get(`/api/deployments/${d.id}/logs`);
  const lines: string[] = logs.body.data.map((l: any) => l.line);
  assert.ok(lines.some((l) => /\[berth\] the build's folders are full: .* of the 128 MB build\.diskMb allows/.test(l)), lines.join('\n'));
  assert.match(d.error, /build\.diskMb/);
  const work = path.join(root, 'data', 'builds', project.id, d.id);
  assert.equal(isMounted(work), false);
  assert.equal(existsSync(`${work}.img`), false);
});
