/**
 * Security review, issue 15 point 7: the data-dir lock was a pid file. After a crash (kill -9) the file
 * stayed, and once its pid was reused by any live process the next `berth serve` refused to start
 * ("another berth server is already using this data dir"). The lock is an flock now: the kernel drops it
 * with the process, whatever the file says.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { acquireDirLock, LockHeldError } from '../../src/lib/lockfile.js';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';

describe('data-dir lock (flock)', () => {
  it('in one process: a second lock on the same dir is refused until the first is released', () => {
    const dir = tempDir();
    const release = acquireDirLock(dir);
    assert.throws(() => acquireDirLock(dir), (e: unknown) => e instanceof LockHeldError && e.pid === process.pid && /already using this data dir/.test(e.message));
    release();
    assert.ok(!existsSync(path.join(dir, 'berth.lock')), 'a clean release removes the file');
    // A stale file naming a live process (this one) does not block.
    writeFileSync(path.join(dir, 'berth.lock'), `${process.pid}\n`);
    const again = acquireDirLock(dir);
    again();
  });

  describe('with real `berth serve` processes', () => {
    const dataDir = tempDir();
    let env: Record<string, string>;
    let pg: { url: string; drop(): Promise<void> } | undefined;
    const running: ServeProcess[] = [];

    after(async () => {
      for (const s of running) await s.stop('SIGKILL').catch(() => {});
      await pg?.drop();
    });

    it('a second server on the same data dir is refused; after kill -9 of the first, a new one starts although the old lock file (naming a live pid) remains', async () => {
      env = { BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_EDGE_PORT: '0', BERTH_LOG_LEVEL: 'warn' };
      if (usingPostgres()) {
        pg = await freshPostgresDatabase();
        env.DATABASE_URL = pg.url;
      } else env.DATABASE_URL = '';

      const first = await startServe(['--port', '0', '--host', '127.0.0.1'], env);
      running.push(first);
      // On PostgreSQL several instances may share the data dir, each under its own name (docs/scale-out.md):
      // two unnamed ones are the same instance, refused the same way.
      const lockFile = usingPostgres() ? path.join(dataDir, 'instances', 'default.lock') : path.join(dataDir, 'berth.lock');
      const refused = usingPostgres() ? /already running as instance "default" on this data dir/ : /already using this data dir/;
      assert.equal(Number(readFileSync(lockFile, 'utf8').trim()), first.child.pid);

      const second = await runCli(['serve', '--port', '0'], { env, timeoutMs: 60000 });
      assert.equal(second.code, 1, second.stderr);
      assert.match(second.stderr, refused);
      assert.match(second.stderr, new RegExp(`pid ${first.child.pid}`));
      assert.equal((await fetch(`${first.url}/api/health`)).status, 200);

      await first.stop('SIGKILL');
      assert.ok(existsSync(lockFile), 'kill -9 leaves the lock file behind');
      // The attack on the pid file: the stale file names a pid that is alive again (pid reuse).
      writeFileSync(lockFile, `${process.pid}\n`);

      const third = await startServe(['--port', '0', '--host', '127.0.0.1'], env);
      running.push(third);
      assert.equal((await fetch(`${third.url}/api/health`)).status, 200);
      assert.equal(Number(readFileSync(lockFile, 'utf8').trim()), third.child.pid);
      // And it holds the lock in turn.
      const fourth = await runCli(['serve', '--port', '0'], { env, timeoutMs: 60000 });
      assert.equal(fourth.code, 1, fourth.stderr);
      assert.match(fourth.stderr, refused);
      assert.equal(await third.stop('SIGTERM'), 0);
      assert.ok(!existsSync(lockFile));
    });
  });
});
