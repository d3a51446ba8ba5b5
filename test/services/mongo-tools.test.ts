// @store-independent: argument arrays and files of MongoDB's tools, no store involved.
/**
 * MongoDB's dump and restore programs as Berth runs them (issue 37 point 4, contract section 19):
 * `mongodump --archive --gzip` and `mongorestore --archive --gzip --drop` as argument arrays, the
 * password never among them but in a `--config` file of the service's own (mode 0600, its uid's),
 * and what is read back from `mongorestore` and the count script. Without a MongoDB server: the
 * end-to-end suite is test/services/mongodb-docker.test.ts (it needs the image).
 */
import assert from 'node:assert/strict';
import { chownSync, lstatSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { COUNT_LINE, countScript, mongodumpArgs, mongorestoreArgs, restoreSummary, toolsConfigText, writeToolsConfig } from '../../src/modules/services/mongo-tools.js';
import { tempDir } from '../support/harness.js';

const creds = { username: 'app', password: '0123456789abcdef0123456789abcdef0123456789abcdef', database: 'docs' };
const root = process.getuid?.() === 0;

describe("MongoDB's dump and restore programs", () => {
  const dir = tempDir('berth-mongo-tools-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('mongodump dumps every database as one gzip archive on its output, signed in as the service user, the password only in its --config file', () => {
    assert.deepEqual(mongodumpArgs({ configPath: '/app/x.yaml', port: 27017, username: 'app' }), [
      '--config=/app/x.yaml',
      '--host=127.0.0.1',
      '--port=27017',
      '--username=app',
      '--authenticationDatabase=admin',
      '--archive',
      '--gzip',
    ]);
  });

  it('mongorestore loads the archive file with --drop, stops at the first error, and leaves out admin, config and local (users come from the credentials)', () => {
    const args = mongorestoreArgs({ configPath: '/app/x.yaml', port: 27018, username: 'app', archive: '/data/berth-restore.archive' });
    assert.deepEqual(args, [
      '--config=/app/x.yaml',
      '--host=127.0.0.1',
      '--port=27018',
      '--username=app',
      '--authenticationDatabase=admin',
      '--archive=/data/berth-restore.archive',
      '--gzip',
      '--drop',
      '--stopOnError',
      '--nsExclude=admin.*',
      '--nsExclude=config.*',
      '--nsExclude=local.*',
    ]);
    assert.ok(!args.some((a) => a.includes(creds.password)));
  });

  it('the --config file holds the password as a quoted YAML scalar', () => {
    assert.equal(toolsConfigText(creds), `password: "${creds.password}"\n`);
    assert.equal(toolsConfigText({ password: 'a"b\\c: d' }), 'password: "a\\"b\\\\c: d"\n');
  });

  it('the --config file is new, mode 0600, given to the owner of the folder the container sees as /app, and removed on request', { skip: root ? false : 'giving a file to another uid needs root' }, async () => {
    const conf = path.join(dir, 'conf');
    mkdirSync(conf, { mode: 0o700 });
    chownSync(conf, 4242, 4343);
    const written = await writeToolsConfig(conf, creds);
    assert.match(written.inside, /^\/app\/berth-mongo-tools-[0-9a-f]{16}\.yaml$/);
    assert.equal(path.dirname(written.hostPath), conf);
    assert.equal(path.basename(written.hostPath), path.basename(written.inside));
    const st = lstatSync(written.hostPath);
    assert.equal(st.mode & 0o777, 0o600);
    assert.deepEqual([st.uid, st.gid], [4242, 4343]);
    assert.equal(readFileSync(written.hostPath, 'utf8'), toolsConfigText(creds));
    await written.remove();
    assert.throws(() => lstatSync(written.hostPath), /ENOENT/);
  });

  it('each run has a file of its own (a new name, created exclusively), so two dumps never share or reuse one', async () => {
    const conf = path.join(dir, 'conf2');
    mkdirSync(conf, { mode: 0o700 });
    const [a, b] = await Promise.all([writeToolsConfig(conf, creds), writeToolsConfig(conf, creds)]);
    assert.notEqual(a.hostPath, b.hostPath);
    await a.remove();
    assert.equal(readFileSync(b.hostPath, 'utf8'), toolsConfigText(creds));
    await b.remove();
    await b.remove();
  });

  it("mongorestore's closing line is read as documents restored and failed; without it, nothing is assumed", () => {
    const out = '2026-11-29T21:00:00.000+0000\tfinished restoring docs.notes (3 documents, 0 failures)\n2026-11-29T21:00:00.001+0000\t3 document(s) restored successfully. 0 document(s) failed to restore.\n';
    assert.deepEqual(restoreSummary(out), { restored: 3, failed: 0 });
    assert.deepEqual(restoreSummary('12 document(s) restored successfully. 2 document(s) failed to restore.'), { restored: 12, failed: 2 });
    assert.equal(restoreSummary('Failed: error connecting to db server'), null);
  });

  it('the count script signs in as the service user, skips admin, config and local, and prints one line the restore reads', () => {
    const js = countScript(creds);
    assert.match(js, /admin\.auth\("app", "0123456789abcdef/);
    assert.match(js, /\["admin","config","local"\]/);
    assert.equal(COUNT_LINE.exec('noise\nberth-documents=42\n')?.[1], '42');
    assert.equal(COUNT_LINE.exec('berth-documents=')?.[1], undefined);
  });
});
