/**
 * Security review, issue 15 point 7: a local import (`POST /api/projects/import`) inside
 * BERTH_LOCAL_ROOTS was copied with its symlinks as they were, so a link to a file outside the roots
 * (`leak.txt -> /etc/...`, or the server's own data dir) put that file in reach of the build and the
 * app: `cat leak.txt` printed it into the build log. Links that lead outside the roots are not copied now
 * (the build log names each one).
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyTreeWithinRoots, resolvePhysical } from '../../src/lib/copy-tree.js';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

const SECRET = 'outside-the-roots-4f1c9a';

/** roots/proj (the imported folder), roots/other (another folder in the roots), outside/ (not in them). */
function makeTree() {
  const base = realpathSync(tempDir('berth-symlinks-'));
  const roots = path.join(base, 'roots');
  const proj = path.join(roots, 'proj');
  const outside = path.join(base, 'outside');
  mkdirSync(path.join(proj, 'sub'), { recursive: true });
  mkdirSync(path.join(roots, 'other'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  writeFileSync(path.join(roots, 'other', 'shared.txt'), 'shared');
  writeFileSync(path.join(proj, 'a.txt'), 'a');
  writeFileSync(path.join(proj, 'sub', 'b.txt'), 'b');
  return { base, roots, proj, outside };
}

describe('local import: symlinks out of BERTH_LOCAL_ROOTS are not copied', () => {
  it('copyTreeWithinRoots keeps links inside the source and the roots, and leaves out every way out', () => {
    const { base, roots, proj, outside } = makeTree();
    const link = (name: string, target: string) => symlinkSync(target, path.join(proj, name));
    link('in-rel', 'a.txt');
    link('sub/up', '../a.txt');
    link('in-abs', path.join(proj, 'a.txt'));
    link('sibling', '../other/shared.txt');
    link('later', 'node_modules/.bin/tool');
    link('out-abs', path.join(outside, 'secret.txt'));
    link('out-rel', '../../outside/secret.txt');
    link('out-dir', outside);
    link('sub/deep-out', '../../../outside');
    link('etc', '/etc/hostname');
    link('dangling-out', '/nonexistent-berth-test/x');
    // `self -> .` then `..` twice climbs from the link's target: out of the source, back in by name.
    link('sub/self', '.');
    link('climb', 'sub/self/../../proj/a.txt');
    mkdirSync(path.join(proj, 'node_modules'));
    writeFileSync(path.join(proj, 'node_modules', 'x.js'), 'skipped by name');

    const dest = path.join(base, 'work', 'src');
    const notes: string[] = [];
    const skipped = copyTreeWithinRoots(proj, dest, { roots: [roots], skipNames: new Set(['node_modules', '.git']), onSkip: (p, why) => notes.push(`${p}: ${why}`) });

    assert.equal(readFileSync(path.join(dest, 'a.txt'), 'utf8'), 'a');
    assert.equal(readFileSync(path.join(dest, 'sub', 'b.txt'), 'utf8'), 'b');
    assert.equal(readlinkSync(path.join(dest, 'in-rel')), 'a.txt');
    assert.equal(readFileSync(path.join(dest, 'sub', 'up'), 'utf8'), 'a');
    assert.equal(readlinkSync(path.join(dest, 'in-abs')), path.join(proj, 'a.txt'));
    // Inside the roots but outside the source: kept, pointing at the real file.
    assert.equal(readlinkSync(path.join(dest, 'sibling')), path.join(roots, 'other', 'shared.txt'));
    assert.equal(readFileSync(path.join(dest, 'sibling'), 'utf8'), 'shared');
    // Dangling but inside the source: kept as it is.
    assert.equal(readlinkSync(path.join(dest, 'later')), 'node_modules/.bin/tool');
    assert.ok(!existsSync(path.join(dest, 'node_modules')));

    const gone = ['out-abs', 'out-rel', 'out-dir', path.join('sub', 'deep-out'), 'etc', 'dangling-out', 'climb'];
    for (const g of gone) {
      assert.throws(() => lstatSync(path.join(dest, g)), /ENOENT/, `${g} must not be in the copy`);
      assert.ok(skipped.some((s) => s.path === g), `${g} is reported`);
    }
    assert.equal(skipped.length, gone.length, JSON.stringify(skipped));
    assert.equal(notes.length, gone.length);
    assert.ok(notes.some((n) => n.startsWith('out-abs: ') && /outside BERTH_LOCAL_ROOTS/.test(n)));
    // `self -> .` stays (it leads inside the copy).
    assert.equal(readlinkSync(path.join(dest, 'sub', 'self')), '.');
  });

  it('resolvePhysical follows links where they stand and takes a missing rest lexically', () => {
    const { proj } = makeTree();
    symlinkSync('.', path.join(proj, 'sub', 'self'));
    assert.equal(resolvePhysical(path.join(proj, 'sub', 'self') + '/../a.txt'), path.join(proj, 'a.txt'));
    assert.equal(resolvePhysical(path.join(proj, 'sub', 'self') + '/../../x'), path.join(path.dirname(proj), 'x'));
    assert.equal(resolvePhysical(path.join(proj, 'missing') + '/../a.txt'), path.join(proj, 'a.txt'));
    symlinkSync('loop', path.join(proj, 'loop'));
    assert.equal(resolvePhysical(path.join(proj, 'loop')), null);
  });

  describe('over HTTP: import, deploy, read the build log', () => {
    let server: TestServer;
    let owner: TestUser;
    let tree: ReturnType<typeof makeTree>;

    before(async () => {
      tree = makeTree();
      server = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: tree.roots } });
      owner = await createUser(server);
    });
    after(async () => {
      await server?.close();
    });

    it('a build that reads a link to a file outside the roots does not see it; the log names the link', async () => {
      const { proj, outside } = tree;
      writeFileSync(path.join(proj, 'server.js'), "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT));\n");
      symlinkSync(path.join(outside, 'secret.txt'), path.join(proj, 'leak.txt'));
      symlinkSync('../../outside/secret.txt', path.join(proj, 'leak-rel.txt'));
      const api = server.api(owner.token);
      const imported = await api.post('/api/projects/import', { path: proj, name: 'symlinks' });
      assert.equal(imported.status, 201, imported.text);
      const projectId = imported.body.data.id;
      const patched = await api.patch(`/api/projects/${projectId}`, { buildCommand: 'cat a.txt leak.txt leak-rel.txt' });
      assert.equal(patched.status, 200, patched.text);

      const dep = await api.post('/api/deployments', { projectId });
      assert.equal(dep.status, 202, dep.text);
      const id = dep.body.data.id;
      const done = await waitForDeployment(api, id);
      const logs = await api.get(`/api/deployments/${id}/logs`);
      assert.equal(logs.status, 200);
      const text = (logs.body.data as { line: string }[]).map((l) => l.line).join('\n');
      assert.ok(!text.includes(SECRET), `the outside file reached the build log:\n${text}`);
      assert.match(text, /not copied: leak\.txt: the symlink points outside BERTH_LOCAL_ROOTS/);
      assert.match(text, /not copied: leak-rel\.txt: the symlink points outside BERTH_LOCAL_ROOTS/);
      // cat found no leak.txt: the build fails, and says so.
      assert.equal(done.status, 'failed', text);
    });
  });
});
