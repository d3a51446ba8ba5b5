// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * Two Berth servers on one host never share a sandbox uid (issue 34 point 10): each data dir claims
 * a range of its own in a host-wide registry, records it, keeps it, and a start whose range overlaps
 * another data dir's is refused. On real files (a temp registry, never /var/lib/berth), in this
 * process, in racing processes, and with real `berth serve` processes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { DriverUnavailableError } from '../../src/runtime/driver.js';
import { createDriver } from '../../src/runtime/drivers.js';
import { claimServerUidRange, uidBase } from '../../src/runtime/identity.js';
import { claimUidRange, DEFAULT_UID_BASE, RANGE_FILE, UID_RANGE_SIZE, UidRangeError } from '../../src/runtime/uid-range.js';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';

const registryIn = (dir: string) => path.join(dir, 'registry', 'uid-ranges.json');
const registered = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { ranges: { dataDir: string; first: number }[] }).ranges;
const R0 = DEFAULT_UID_BASE - 1;

describe('sandbox uid ranges per data dir', () => {
  it('two data dirs get different ranges, each recorded in its data dir and in the registry; a restart keeps its range', () => {
    const registry = registryIn(tempDir());
    const [a, b] = [tempDir(), tempDir()];
    const ra = claimUidRange({ dataDir: a, registry });
    const rb = claimUidRange({ dataDir: b, registry });
    assert.deepEqual(ra, { first: R0, size: UID_RANGE_SIZE }, 'the first takes range 0 (projects from 200000, as before ranges)');
    assert.deepEqual(rb, { first: R0 + UID_RANGE_SIZE, size: UID_RANGE_SIZE });
    assert.equal(JSON.parse(readFileSync(path.join(b, RANGE_FILE), 'utf8')).first, rb.first);
    assert.deepEqual(registered(registry).map((r) => r.first), [ra.first, rb.first]);
    assert.deepEqual(claimUidRange({ dataDir: a, registry }), ra, 'a restart reads its recorded range');
    assert.deepEqual(claimUidRange({ dataDir: b, registry, base: 500000 }), rb, 'a recorded range wins over BERTH_SANDBOX_UID_BASE');
    assert.equal(registered(registry).length, 2);
  });

  it('a range overlapping another data dir\'s is refused, naming that data dir and the way out; nothing is recorded for it', () => {
    const registry = registryIn(tempDir());
    const a = tempDir();
    claimUidRange({ dataDir: a, registry });
    const forced = tempDir();
    assert.throws(
      () => claimUidRange({ dataDir: forced, registry, base: DEFAULT_UID_BASE + 1000 }),
      (e: unknown) => e instanceof UidRangeError && e.message.includes(`claimed by the data dir ${a}`) && /must not share uids/.test(e.message) && /BERTH_SANDBOX_UID_BASE/.test(e.message),
    );
    assert.ok(!existsSync(path.join(forced, RANGE_FILE)), 'the refused data dir records no range');
    assert.equal(registered(registry).length, 1);

    // A copy of a data dir (its recorded range with it) is refused while the original holds the range.
    const copy = tempDir();
    cpSync(path.join(a, RANGE_FILE), path.join(copy, RANGE_FILE));
    assert.throws(() => claimUidRange({ dataDir: copy, registry }), (e: unknown) => e instanceof UidRangeError && e.message.includes(`if this data dir is a copy of ${a}`));
  });

  it('a data dir that is gone frees its range; one whose database `berth admin` made first claims like a new one', () => {
    const registry = registryIn(tempDir());
    const gone = tempDir();
    claimUidRange({ dataDir: gone, registry });
    rmSync(gone, { recursive: true, force: true });
    const next = tempDir();
    assert.equal(claimUidRange({ dataDir: next, registry }).first, R0, 'the range of a removed data dir is free again');
    assert.deepEqual(registered(registry).map((r) => r.dataDir), [next]);

    const adminFirst = tempDir();
    writeFileSync(path.join(adminFirst, 'berth.db'), '');
    assert.equal(claimUidRange({ dataDir: adminFirst, registry }).first, R0 + UID_RANGE_SIZE);
  });

  it('data dirs claiming at the same moment from separate processes all get ranges of their own', async () => {
    const registry = registryIn(tempDir());
    const dirs = Array.from({ length: 4 }, () => tempDir());
    const code = `import { claimUidRange } from ${JSON.stringify(path.resolve('src/runtime/uid-range.ts'))}; process.stdout.write(String(claimUidRange({ dataDir: process.argv[1], registry: process.argv[2] }).first));`;
    const firsts = await Promise.all(
      dirs.map(
        (dir) =>
          new Promise<number>((resolve, reject) => {
            const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, dir, registry], { stdio: ['ignore', 'pipe', 'pipe'] });
            let out = '';
            let err = '';
            child.stdout.on('data', (d: Buffer) => (out += d));
            child.stderr.on('data', (d: Buffer) => (err += d));
            child.on('exit', (c) => (c === 0 ? resolve(Number(out)) : reject(new Error(`claim exited ${c}: ${err}`))));
          }),
      ),
    );
    assert.equal(new Set(firsts).size, dirs.length, `distinct ranges: ${firsts.join(', ')}`);
    assert.equal(registered(registry).length, dirs.length);
  });

  it('once claimed, projects get uids from the range (the egress check its first), and a box past its end is refused', { skip: process.getuid?.() !== 0 ? 'needs root' : false }, async () => {
    const dataDir = tempDir();
    const range = claimServerUidRange(dataDir, { BERTH_UID_REGISTRY: registryIn(tempDir()) });
    assert.equal(uidBase(range), range.first + 1);
    const driver = createDriver('sandbox', dataDir, {}, undefined, null, range);
    const past = range.first + range.size;
    await assert.rejects(
      driver.open({ kind: 'build', projectId: 'p', name: `past-${process.pid}`, identity: { uid: past, gid: past }, limits: { cpuCores: 0.5, memoryMb: 128 }, appDir: dataDir }),
      (e: unknown) => e instanceof DriverUnavailableError && e.message.includes(`uid ${past} is past this data dir's sandbox uid range`),
    );
  });

  describe('with real `berth serve` processes (root)', { skip: process.getuid?.() !== 0 ? 'needs root' : false }, () => {
    const registry = registryIn(tempDir());
    const running: ServeProcess[] = [];
    const pgs: { drop(): Promise<void> }[] = [];
    after(async () => {
      for (const s of running) await s.stop('SIGKILL').catch(() => {});
      for (const p of pgs) await p.drop().catch(() => {});
    });
    const envFor = async (dataDir: string, extra: Record<string, string> = {}) => {
      const env: Record<string, string> = { BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_EDGE_PORT: '0', BERTH_LOG_LEVEL: 'warn', BERTH_UID_REGISTRY: registry, ...extra };
      if (usingPostgres()) {
        const pg = await freshPostgresDatabase();
        pgs.push(pg);
        env.DATABASE_URL = pg.url;
      } else env.DATABASE_URL = '';
      return env;
    };

    it('two servers on two data dirs run side by side with different ranges; a third forced into one of them does not start and says why', async () => {
      const [a, b] = [tempDir(), tempDir()];
      const first = await startServe(['--port', '0', '--host', '127.0.0.1'], await envFor(a));
      running.push(first);
      const second = await startServe(['--port', '0', '--host', '127.0.0.1'], await envFor(b));
      running.push(second);
      const ra = JSON.parse(readFileSync(path.join(a, RANGE_FILE), 'utf8')).first;
      const rb = JSON.parse(readFileSync(path.join(b, RANGE_FILE), 'utf8')).first;
      assert.notEqual(ra, rb);
      assert.ok(Math.abs(ra - rb) >= UID_RANGE_SIZE, `ranges ${ra} and ${rb} do not overlap`);

      const c = tempDir();
      const third = await runCli(['serve', '--port', '0', '--host', '127.0.0.1'], { env: await envFor(c, { BERTH_SANDBOX_UID_BASE: String(rb + 10) }), timeoutMs: 60000 });
      assert.equal(third.code, 1, third.stderr);
      assert.match(third.stderr, /error: the sandbox uid range \d+-\d+ of the data dir .* overlaps/);
      assert.ok(third.stderr.includes(b), `names the other data dir: ${third.stderr}`);
      assert.equal((await fetch(`${second.url}/api/health`)).status, 200, 'the running server is untouched');
    });
  });
});
