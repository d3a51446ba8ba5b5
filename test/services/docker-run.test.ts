// @store-independent: what it checks is the docker runtime's containers and networks for services, the same on either store.
/**
 * Managed services on the `docker` runtime (issue 37 points 1 and 2, contract sections 13 and 19): a
 * container per service from its kind's image (BERTH_IMAGE_POSTGRES, ...: here the images
 * scripts/docker-base-images.sh builds from the host's Debian packages) on the project's network, as
 * the project's uid without capabilities. A client container on that network writes through the
 * DATABASE_URL and REDIS_URL the project's app gets; a native dump runs inside the service's container;
 * a kill -9 of the database restarts it on its data; another project's container cannot connect; stop,
 * start, resize and delete (keepVolume) act on the container. MongoDB has no local image: its service
 * fails saying which variable names one. Skips with the reason when no engine or image is there.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { managedBackups, managedServiceEnv } from '../../src/modules/services/index.js';
import { networkName } from '../../src/runtime/docker/containers.js';
import type { DockerDriver } from '../../src/runtime/docker/docker-driver.js';
import { instanceKeyOf } from '../../src/runtime/drivers.js';
import { dockerSuite } from '../support/docker.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { serviceRunning } from './helpers.js';

const POSTGRES = 'berth-test/postgres:15';
const REDIS = 'berth-test/redis:7';
const { engine, skip } = await dockerSuite('test/services/docker-run', { image: POSTGRES });
const missingRedis = !skip && !(await engine.api.getImage(REDIS).inspect().then(() => true, () => false));
const reason = skip ?? (missingRedis ? `the image ${REDIS} is missing (scripts/docker-base-images.sh redis builds it)` : null);

describe('managed services on the docker runtime', { skip: reason ?? false }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  const api = () => server.api(owner.token);
  const runner = () => server.ctx.state.services.runner!;
  const running = (projectId: string, id: string, timeoutMs = 120_000) => serviceRunning(server, owner.token, projectId, id, timeoutMs);

  before(async () => {
    dir = tempDir('berth-svc-docker-');
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({
      background: true,
      dataDir: path.join(dir, 'data'),
      databaseUrl: pg?.url,
      env: { BERTH_RUNTIME: 'docker', BERTH_IMAGE_POSTGRES: POSTGRES, BERTH_IMAGE_REDIS: REDIS, BERTH_IMAGE_MONGODB: 'berth-test/mongo-absent:7' },
    });
    owner = await createUser(server);
    await waitFor(() => server.ctx.state.services.runner, 'the services runner', 30_000, 50);
  });
  after(async () => {
    await server?.close();
    // The projects' networks (the server keeps them for the projects, which this suite does not delete).
    if (server) for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${instanceKeyOf(server.dataDir)}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `script` (sh, constant text; the values come from `env`) in a one-off container of `image` on a project's network. */
  async function client(projectId: string, image: string, script: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
    const c = await engine.api.createContainer({
      Image: image,
      Entrypoint: [],
      Cmd: ['sh', '-c', script],
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      User: '1000:1000',
      // A TTY: the output comes back as one plain stream.
      Tty: true,
      HostConfig: { NetworkMode: networkName(instanceKeyOf(server.dataDir), projectId) },
    });
    try {
      await c.start();
      const { StatusCode } = (await c.wait()) as { StatusCode: number };
      const out = ((await c.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString('utf8');
      return { code: StatusCode, out };
    } finally {
      await c.remove({ force: true }).catch(() => {});
    }
  }

  const containersOf = (projectId: string): Promise<Docker.ContainerInfo[]> => engine.api.listContainers({ filters: { label: [`berth.project=${projectId}`, 'berth.kind=service'] } });

  it('GET /api/services/kinds: docker offers each kind in the version its configured image runs', async () => {
    const r = await api().get('/api/services/kinds');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.runtime, 'docker');
    const docker = r.body.data.runtimes.find((o: any) => o.runtime === 'docker');
    assert.deepEqual(
      docker.kinds.map((k: any) => [k.kind, k.defaultVersion, k.image]),
      [['postgres', '15', POSTGRES], ['mysql', '11.4', 'mariadb:11.4'], ['redis', '7', REDIS], ['mongodb', '7', 'berth-test/mongo-absent:7']],
    );
  });

  it('postgres and redis run as containers on the project network; the app variables write through them; a dump runs inside; a kill -9 restarts it', async () => {
    const p = await createProject(server, owner);
    const other = await createProject(server, owner);
    const made = await Promise.all(['postgres', 'redis'].map((kind) => api().post(`/api/projects/${p.id}/services`, { kind, name: kind === 'postgres' ? 'main-db' : 'cache' })));
    for (const m of made) assert.equal(m.status, 201, m.text);
    const [db, cache] = await Promise.all(made.map((m) => running(p.id, m.body.data.id)));
    assert.equal(db.version, '15');
    // One container each, of the kind's image, as the project's uid, without capabilities.
    const boxes = await containersOf(p.id);
    assert.deepEqual(boxes.map((c) => c.Image).sort(), [POSTGRES, REDIS]);
    const info = await engine.api.getContainer(boxes.find((c) => c.Image === POSTGRES)!.Id).inspect();
    assert.notEqual(info.Config.User.split(':')[0], '0', 'not root');
    assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
    assert.equal(info.NetworkSettings.Networks[networkName(instanceKeyOf(server.dataDir), p.id)]?.IPAddress, db.internalHost);

    // What the project's app gets, used from a container on its network.
    const wired = await managedServiceEnv(server.ctx, p.orgId, p.id);
    assert.match(wired.env.DATABASE_URL!, new RegExp(`^postgres://app:[0-9a-f]+@${db.internalHost.replace(/\./g, '\\.')}:5432/main_db$`));
    const wrote = await client(p.id, POSTGRES, 'psql -X -P pager=off -v ON_ERROR_STOP=1 -tA -d "$DATABASE_URL" -c "create table notes (body text); insert into notes values (\'kept\')"', wired.env);
    assert.equal(wrote.code, 0, wrote.out);
    const cached = await client(p.id, REDIS, 'redis-cli --no-auth-warning -u "$REDIS_URL" set greeting hello && redis-cli --no-auth-warning -u "$REDIS_URL" get greeting', wired.env);
    assert.equal(cached.code, 0, cached.out);
    assert.match(cached.out, /hello/);

    // Another project's container cannot connect (its own network), with the right password even.
    await (server.ctx.ports.runtimeHost!.driver as DockerDriver).ctx!.networks.ensure(other.id);
    const foreign = await client(other.id, POSTGRES, 'PGCONNECT_TIMEOUT=3 psql -X -P pager=off -tA -d "$DATABASE_URL" -c "select 1"', wired.env);
    assert.notEqual(foreign.code, 0, foreign.out);

    // A native dump by the image's own pg_dump, inside the service's container.
    const row = (await managedBackups.find(server.ctx.db, p.orgId, p.id, db.id))!;
    const chunks: Buffer[] = [];
    for await (const c of await managedBackups.dump(server.ctx, row)) chunks.push(c as Buffer);
    const dump = Buffer.concat(chunks);
    assert.equal(dump.subarray(0, 5).toString('latin1'), 'PGDMP', 'a custom-format dump');
    assert.ok(dump.includes(Buffer.from('notes')), 'holding the table');
    const redisRow = (await managedBackups.find(server.ctx.db, p.orgId, p.id, cache.id))!;
    const rdb: Buffer[] = [];
    for await (const c of await managedBackups.dump(server.ctx, redisRow)) rdb.push(c as Buffer);
    assert.equal(Buffer.concat(rdb).subarray(0, 5).toString('latin1'), 'REDIS', 'an RDB file by BGSAVE');

    // kill -9 of the postmaster (a host pid of the exec'd server): restarted with backoff, on its data.
    const creds = (await api().get(`/api/projects/${p.id}/services/${db.id}/credentials`)).body.data;
    const postmaster = runner()
      .pids(db.id)
      .find((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === 'postgres';
        } catch {
          return false; // a backend that ended between the listing and the read
        }
      });
    assert.ok(postmaster, 'the server is a process of the box');
    assert.ok(!readFileSync(`/proc/${postmaster}/cmdline`, 'utf8').includes(creds.password), 'no secret in a command line');
    process.kill(postmaster!, 'SIGKILL');
    await waitFor(() => runner().logs(db.id).some((l) => l.includes('postgres exited; starting again')), 'the crash seen and a restart planned', 30_000, 100);
    const again = await running(p.id, db.id);
    assert.equal(again.internalHost, db.internalHost, 'the container (and its address) outlived the crash');
    const read = await client(p.id, POSTGRES, 'psql -X -P pager=off -tA -d "$DATABASE_URL" -c "select body from notes"', wired.env);
    assert.equal(read.out.trim(), 'kept', read.out);
    assert.ok(!runner().logs(db.id).join('\n').includes(creds.password), 'the log has no password');

    // Resize: a new container with the new memory; stop: none; start; delete keeping the volume.
    const base = `/api/projects/${p.id}/services/${db.id}`;
    assert.equal((await api().patch(base, { resources: { memoryMb: 384 } })).status, 200);
    const resized = await running(p.id, db.id);
    const now = (await containersOf(p.id)).find((c) => c.Image === POSTGRES)!;
    assert.equal((await engine.api.getContainer(now.Id).inspect()).HostConfig.Memory, 384 * 1024 * 1024);
    assert.equal((await client(p.id, POSTGRES, 'psql -X -P pager=off -tA -h "$H" -d "$D" -c "select body from notes"', { ...wired.env, H: resized.internalHost, D: wired.env.PGDATABASE! })).out.trim(), 'kept');
    assert.equal((await api().patch(base, { stopped: true })).body.data.status, 'stopped');
    assert.deepEqual((await containersOf(p.id)).map((c) => c.Image), [REDIS]);
    assert.equal((await api().patch(base, { stopped: false })).status, 200);
    await running(p.id, db.id);
    const volume = runner().volumeDir({ projectId: p.id, id: db.id });
    assert.equal((await api().delete(`${base}?keepVolume=true`)).status, 200);
    assert.deepEqual((await containersOf(p.id)).map((c) => c.Image), [REDIS]);
    assert.ok(existsSync(path.join(volume, 'data', 'pgdata', 'PG_VERSION')), 'keepVolume kept the data');
    assert.equal((await api().delete(`/api/projects/${p.id}/services/${cache.id}`)).status, 200);
    assert.deepEqual(await containersOf(p.id), []);
  });

  it('mongodb without its image fails at once, naming BERTH_IMAGE_MONGODB', async () => {
    const p = await createProject(server, owner);
    const made = await api().post(`/api/projects/${p.id}/services`, { kind: 'mongodb', name: 'docs' });
    assert.equal(made.status, 201, made.text);
    const failed = await waitFor(
      async () => {
        const r = (await api().get(`/api/projects/${p.id}/services/${made.body.data.id}`)).body.data;
        return r.status === 'failed' ? r : null;
      },
      'the mongodb service failed',
      60_000,
      200,
    );
    assert.match(failed.error, /BERTH_IMAGE_MONGODB/);
    assert.match(failed.error, /berth-test\/mongo-absent:7/);
  });
});
