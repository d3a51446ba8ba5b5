import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { createDestination, createPolicy, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { startServe, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { TERMINAL } from './helpers.js';

const RUNS = 20;
const KILLS = 3;

describe('kill -9 during backup runs', () => {
  const dataDir = tempDir('berth-crash-');
  const destDir = tempDir('berth-crash-dest-');
  const secret = randomBytes(32).toString('base64');
  let pgDb: { url: string; drop(): Promise<void> } | undefined;
  let env: Record<string, string>;
  let owner: TestUser;
  let policyId: string;
  let projectId: string;

  before(async () => {
    if (usingPostgres()) pgDb = await freshPostgresDatabase();
    env = { BERTH_SECRET_KEY: secret, BERTH_LOCAL_BACKUP_ROOT: os.tmpdir(), ...(pgDb ? { DATABASE_URL: pgDb.url } : { DATABASE_URL: '' }) };
    // Set up the records with an in-process server on the same data dir and database.
    const setup = await startTestServer({ dataDir, databaseUrl: pgDb?.url, env: { BERTH_SECRET_KEY: secret } });
    owner = await createUser(setup);
    const p = await createProjectWithVolume(setup, owner);
    projectId = p.id;
    // A volume big enough that a run takes a little while (so kills land mid-run), small enough to stay fast.
    const { mkdirSync } = await import('node:fs');
    mkdirSync(path.join(p.volume, 'd'), { recursive: true });
    for (let i = 0; i < 4; i++) writeFileSync(path.join(p.volume, 'd', `f${i}.bin`), randomBytes(512 * 1024));
    const dest = await createDestination(setup, owner, { name: 'crash', dir: destDir });
    policyId = (await createPolicy(setup, owner, p, { destinationId: dest.id })).id;
    await setup.close();
  });

  after(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(destDir, { recursive: true, force: true });
    await pgDb?.drop();
  });

  /** Waits for a run to end, on the server process `child`. */
  async function waitRun(child: ServeProcess, runId: string): Promise<void> {
    await waitFor(async () => {
      const got = await fetch(`${child.url}/api/backup-runs/${runId}`, { headers: { authorization: `Bearer ${owner.token}` } });
      return TERMINAL.includes(((await got.json()).data as { status: string }).status);
    }, `run ${runId} to end`, 30000, 25);
  }

  it(`leaves no succeeded run without a valid artifact (${RUNS} runs, ${KILLS} kills at random points)`, async () => {
    let started = 0;
    for (let k = 0; k < KILLS; k++) {
      const child = await startServe(['--port', '0', '--data-dir', dataDir, '--edge-port', '0'], { ...env, BERTH_LOG_LEVEL: 'silent' }, 30000);
      try {
        const perLife = Math.ceil((RUNS - started) / (KILLS - k));
        for (let i = 0; i < perLife && started < RUNS; i++) {
          let runId = '';
          for (let attempt = 0; attempt < 5 && !runId; attempt++) {
            const res = await fetch(`${child.url}/api/backup-policies/${policyId}/run`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
            const text = await res.text();
            assert.ok(res.status === 201 || res.status === 200, text);
            const id = JSON.parse(text).data.runId as string;
            if (res.status === 201) runId = id;
            // 200: a run of the killed life still looks in flight (PostgreSQL waits for its heartbeat to go stale).
            else await waitRun(child, id);
          }
          assert.ok(runId, 'a new run started');
          started++;
          const last = i === perLife - 1 || started === RUNS;
          if (last) {
            // Kill at a random point of this run.
            await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 150)));
          } else {
            await waitRun(child, runId);
          }
        }
      } finally {
        await child.stop('SIGKILL');
      }
    }

    // Restart (in process, with background work: crash recovery runs at start).
    const server = await startTestServer({ dataDir, databaseUrl: pgDb?.url, env: { BERTH_SECRET_KEY: secret }, background: true });
    try {
      // Crash recovery settles every run the kills left in flight.
      const runs = await waitFor(async () => {
        const list: any[] = (await server.api(owner.token).get(`/api/projects/${projectId}/backup-runs?limit=200`)).body.data;
        return list.every((r) => TERMINAL.includes(r.status)) ? list : null;
      }, 'every run to be settled after the restart', 20000, 100);
      assert.equal(runs.length, RUNS);
      if (process.env.BERTH_TEST_VERBOSE) console.log(runs.map((r) => r.status).join(' '));
      const inFlight = runs.filter((r) => !TERMINAL.includes(r.status));
      assert.deepEqual(inFlight, [], 'no run is left in flight after a restart');
      const polDir = path.join(destDir, 'berth', owner.orgId, projectId, policyId);
      const files = existsSync(polDir) ? readdirSync(polDir) : [];
      for (const r of runs.filter((x) => x.status === 'succeeded')) {
        const file = path.join(polDir, `${r.id}.tar.gz`);
        assert.ok(existsSync(file), `artifact of succeeded run ${r.id}`);
        const buf = readFileSync(file);
        assert.equal(buf.length, r.sizeBytes);
        assert.equal(createHash('sha256').update(buf).digest('hex'), r.sha256);
      }
      // Interrupted runs left nothing behind: every object is the artifact of a succeeded run.
      const ok = new Set(runs.filter((x) => x.status === 'succeeded').map((r) => `${r.id}.tar.gz`));
      assert.deepEqual(files.filter((f) => !ok.has(f)), []);
      assert.ok(runs.some((r) => r.status === 'succeeded'));
    } finally {
      await server.close();
    }
  });
});
