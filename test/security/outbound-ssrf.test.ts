/**
 * Issue 15, point 4 (SSRF): S3 destination endpoints and postgres connection URLs reached loopback,
 * link-local (169.254.169.254), private and encoded addresses; the destination test sent signed
 * requests there and echoed what the peer answered; pg_dump was a port scanner with an error oracle.
 * Now: refused with 400 naming the field (create, update, test), refused again at every use (runs,
 * restores), connections pinned to checked addresses, and failures in Berth's words only.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { encryptSecret } from '../../src/lib/crypto.js';
import { newId, nowIso } from '../../src/lib/ids.js';
import { OutboundPolicy, OutboundRefusedError, blockedReason } from '../../src/lib/outbound.js';
import { createDestination, createPolicy, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitTerminal } from '../backups/helpers.js';
import { startS3 } from '../backups/s3.js';

/** A TCP listener on 127.0.0.1 that counts connections (what a refused target must never see). */
async function tripwire(): Promise<{ port: number; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    hits++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.destroy();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as net.AddressInfo).port,
    hits: () => hits,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}

/** Every spelling of an internal target the review used (decimal, octal, hex, mapped, names). */
function badEndpoints(port: number): string[] {
  return [
    `http://127.0.0.1:${port}`,
    `http://localhost:${port}`,
    `http://169.254.169.254`,
    `http://10.0.0.1:${port}`,
    `http://2130706433:${port}`,
    `http://0x7f000001:${port}`,
    `http://0177.0.0.1:${port}`,
    `http://[::1]:${port}`,
    `http://[::ffff:127.0.0.1]:${port}`,
    `http://127.1:${port}`,
    `http://192.168.1.1`,
    `http://100.64.0.1`,
    `http://[fd00::1]`,
    `http://[fe80::1]`,
    `http://0.0.0.0:${port}`,
  ];
}

function badDatabaseUrls(port: number): string[] {
  return [
    `postgres://u:p@127.0.0.1:${port}/db`,
    `postgres://u:p@localhost:${port}/db`,
    `postgres://u:p@169.254.169.254/db`,
    `postgres://u:p@10.0.0.1/db`,
    `postgres://u:p@2130706433:${port}/db`,
    `postgres://u:p@0x7f000001:${port}/db`,
    `postgres://u:p@0177.0.0.1:${port}/db`,
    `postgres://u:p@[::1]:${port}/db`,
    `postgres://u:p@[::ffff:127.0.0.1]:${port}/db`,
    `postgresql://u:p@172.16.0.5/db`,
    // Not a TCP host the check can see: a Unix socket, a host list, a host parameter.
    `postgres://u:p@/db?host=/var/run/postgresql`,
    `postgres://u:p@8.8.8.8/db?host=127.0.0.1`,
    `postgres://u:p@h1,h2/db`,
  ];
}

describe('outbound SSRF: S3 endpoints and database URLs (no allow-list)', () => {
  let server: TestServer;
  let owner: TestUser;
  let wire: Awaited<ReturnType<typeof tripwire>>;

  before(async () => {
    [server, wire] = await Promise.all([startTestServer({ background: true, env: { BERTH_OUTBOUND_ALLOW: '' } }), tripwire()]);
    owner = await createUser(server);
  });
  after(async () => {
    await server.close();
    await wire.close();
  });

  const s3Body = (endpoint: string | null) => ({
    name: 'ssrf',
    kind: 's3',
    endpoint,
    region: 'us-east-1',
    bucket: 'bucket',
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'secret-key',
    forcePathStyle: true,
  });

  it('creating an S3 destination on an internal endpoint is 400 naming endpoint, in every spelling', async () => {
    for (const endpoint of badEndpoints(wire.port)) {
      const res = await server.api(owner.token).post('/api/backup-destinations', s3Body(endpoint));
      assert.equal(res.status, 400, `${endpoint}: ${res.text}`);
      assert.equal(res.body.error.code, 'VALIDATION_FAILED', endpoint);
      assert.equal(res.body.error.field, 'endpoint', endpoint);
    }
    assert.equal(wire.hits(), 0, 'no connection was made to a refused endpoint');
  });

  it('updating an S3 destination to an internal endpoint is 400 naming endpoint', async () => {
    // No endpoint: AWS itself (nothing to resolve at creation).
    const c = await server.api(owner.token).post('/api/backup-destinations', s3Body(null));
    assert.equal(c.status, 201, c.text);
    for (const endpoint of badEndpoints(wire.port)) {
      const res = await server.api(owner.token).patch(`/api/backup-destinations/${c.body.data.id}`, { endpoint });
      assert.equal(res.status, 400, `${endpoint}: ${res.text}`);
      assert.equal(res.body.error.field, 'endpoint', endpoint);
    }
    const row = await server.ctx.db.selectFrom('backupDestinations').select('endpoint').where('id', '=', c.body.data.id).executeTakeFirstOrThrow();
    assert.equal(row.endpoint, null, 'nothing was stored');
  });

  it('the test button re-checks a stored endpoint (an old row, or DNS that changed): 400, and no request is sent', async () => {
    const c = await server.api(owner.token).post('/api/backup-destinations', s3Body(null));
    const id = c.body.data.id as string;
    for (const endpoint of badEndpoints(wire.port)) {
      await server.ctx.db.updateTable('backupDestinations').set({ endpoint }).where('id', '=', id).execute();
      const res = await server.api(owner.token).post(`/api/backup-destinations/${id}/test`);
      assert.equal(res.status, 400, `${endpoint}: ${res.text}`);
      assert.equal(res.body.error.code, 'VALIDATION_FAILED');
      assert.equal(res.body.error.field, 'endpoint');
    }
    assert.equal(wire.hits(), 0, 'the signed probe never left');
  });

  it('a backup run and a restore re-check the endpoint at use: the run fails in Berth\'s words, nothing connects', async () => {
    const c = await server.api(owner.token).post('/api/backup-destinations', s3Body(null));
    const id = c.body.data.id as string;
    const p = await createProjectWithVolume(server, owner);
    const pol = await createPolicy(server, owner, p, { destinationId: id });
    await server.ctx.db.updateTable('backupDestinations').set({ endpoint: `http://2130706433:${wire.port}` }).where('id', '=', id).execute();
    const runId = (await server.api(owner.token).post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /internal/);
    assert.equal(wire.hits(), 0);

    // A succeeded run whose destination moved to an internal address afterwards: prepare is refused.
    const fakeId = newId('bkr');
    const full = await server.ctx.db.selectFrom('backupRuns').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
    await server.ctx.db.insertInto('backupRuns').values({ ...full, id: fakeId, status: 'succeeded', artifactKey: 'berth/x.tar.gz', sha256: 'a'.repeat(64), sizeBytes: 1, activeKey: null, error: null }).execute();
    const prep = await server.api(owner.token).post(`/api/backup-runs/${fakeId}/restore/prepare`, {});
    assert.equal(prep.status, 400, prep.text);
    assert.equal(prep.body.error.field, 'endpoint');
    assert.equal(wire.hits(), 0);
  });

  it('attaching a postgres service on an internal host is 400 naming connectionUrl, in every spelling', async () => {
    const p = await createProjectWithVolume(server, owner);
    for (const connectionUrl of badDatabaseUrls(wire.port)) {
      const res = await server.api(owner.token).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: `db-${Math.random().toString(36).slice(2, 8)}`, connectionUrl });
      assert.equal(res.status, 400, `${connectionUrl}: ${res.text}`);
      assert.equal(res.body.error.code, 'VALIDATION_FAILED', connectionUrl);
      assert.equal(res.body.error.field, 'connectionUrl', connectionUrl);
      assert.ok(!res.text.includes('u:p@'), 'the URL is not echoed');
    }
    assert.equal(wire.hits(), 0);
  });

  it('pg_dump is not a port scanner: a stored internal database URL fails the run before pg_dump connects', async () => {
    const p = await createProjectWithVolume(server, owner);
    const name = 'scan';
    const url = `postgres://u:p@2130706433:${wire.port}/db`;
    const svcId = newId('svc');
    await server.ctx.db
      .insertInto('services')
      .values({ id: svcId, orgId: owner.orgId, projectId: p.id, kind: 'postgres', name, connectionUrl: encryptSecret(server.ctx.keyring, url, `service:${p.id}:${name}`), createdAt: nowIso() })
      .execute();
    const dest = await createDestination(server, owner);
    const pol = await createPolicy(server, owner, p, { destinationId: dest.id, serviceId: svcId });
    const runId = (await server.api(owner.token).post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 30000);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /could not connect: .*internal/);
    assert.equal(wire.hits(), 0, 'pg_dump never reached the port');
  });

  it('DNS rebinding: the socket uses the addresses checked at connect time, so a name that turns internal is refused', async () => {
    let calls = 0;
    // A resolver whose answer changes between the first check and the connection (public, then loopback).
    const policy = new OutboundPolicy([], async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]));
    await policy.resolve('rebind.example');
    const { httpAgent } = policy.agents();
    const err = await new Promise<Error>((resolve) => {
      const req = http.get({ host: 'rebind.example', port: wire.port, agent: httpAgent, timeout: 5000 }, () => resolve(new Error('connected')));
      req.on('error', resolve);
    });
    httpAgent.destroy();
    assert.ok(err instanceof OutboundRefusedError, String(err));
    assert.equal(wire.hits(), 0);
    // IP literals never reach a lookup: the agent checks them before opening the socket.
    const { httpAgent: a2 } = policy.agents();
    const err2 = await new Promise<Error>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: wire.port, agent: a2, timeout: 5000 }, () => resolve(new Error('connected')));
      req.on('error', resolve);
    });
    a2.destroy();
    assert.ok(err2 instanceof OutboundRefusedError, String(err2));
    assert.equal(wire.hits(), 0);
  });

  it('address classes: mapped, embedded and metadata forms are refused; public unicast is not', () => {
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '169.254.169.254', 'fd00:ec2::254', '168.63.129.16', '10.1.2.3', '172.31.0.1', '192.168.0.1', '100.64.0.1', '0.0.0.0', '::', '224.0.0.1', '255.255.255.255', 'fe80::1', 'fc00::1', '64:ff9b::7f00:1', '2002:7f00:1::1', '::7f00:1', 'ff02::1']) {
      assert.ok(blockedReason(a), `${a} must be refused`);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '64:ff9b::808:808']) assert.equal(blockedReason(a), null, a);
  });

  it('a listed host lets that name through whatever it resolves to; its address alone does not', async () => {
    const policy = new OutboundPolicy(['localhost']);
    assert.ok((await policy.resolve('LOCALHOST.')).addresses.some((a) => a.address === '127.0.0.1'));
    await assert.rejects(policy.resolve('127.0.0.1'), OutboundRefusedError);
    await assert.rejects(policy.resolve('2130706433'), OutboundRefusedError);
  });
});

describe('outbound SSRF: BERTH_OUTBOUND_ALLOW lets a listed host or CIDR through', () => {
  let server: TestServer;
  let owner: TestUser;
  let s3: Awaited<ReturnType<typeof startS3>>;
  let peer: http.Server;
  let peerUrl: string;
  const SECRET_BODY = 'UPSTREAM-SECRET-7f3a';

  before(async () => {
    // 127.0.0.0/8 as a CIDR; `localhost` is not listed, so a name is not let through by its address alone... unless the address is listed.
    [server, s3] = await Promise.all([startTestServer({ background: true, env: { BERTH_OUTBOUND_ALLOW: '127.0.0.0/8' } }), startS3()]);
    owner = await createUser(server);
    // A peer that answers every request with an S3-style 403 and then 500 bodies holding a marker.
    let n = 0;
    peer = http.createServer((req, res) => {
      req.resume();
      const status = n++ % 2 === 0 ? 403 : 500;
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0"?><Error><Code>${status === 403 ? 'AccessDenied' : 'InternalError'}</Code><Message>${SECRET_BODY}</Message></Error>`);
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    peerUrl = `http://127.0.0.1:${(peer.address() as net.AddressInfo).port}`;
  });
  after(async () => {
    await server.close();
    await s3.close();
    await new Promise<void>((r) => peer.close(() => r()));
  });

  it('a listed CIDR lets the destination through: create 201 and the test passes against s3rver', async () => {
    const c = await server.api(owner.token).post('/api/backup-destinations', {
      name: 's3',
      kind: 's3',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: s3.bucket,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
    });
    assert.equal(c.status, 201, c.text);
    const t = await server.api(owner.token).post(`/api/backup-destinations/${c.body.data.id}/test`);
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.data.ok, true, t.text);
    // Still refused: what the list does not hold.
    const other = await server.api(owner.token).post('/api/backup-destinations', { ...c.body.data, kind: 's3', endpoint: 'http://169.254.169.254', secretAccessKey: 'x' });
    assert.equal(other.status, 400);
    assert.equal(other.body.error.field, 'endpoint');
  });

  it('the test never echoes what the endpoint answered: fixed words only', async () => {
    const c = await server.api(owner.token).post('/api/backup-destinations', {
      name: 'peer',
      kind: 's3',
      endpoint: peerUrl,
      region: 'us-east-1',
      bucket: 'bucket',
      accessKeyId: 'AKID',
      secretAccessKey: 'secret',
      forcePathStyle: true,
    });
    assert.equal(c.status, 201, c.text);
    const seen = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const t = await server.api(owner.token).post(`/api/backup-destinations/${c.body.data.id}/test`);
      assert.equal(t.status, 200, t.text);
      assert.equal(t.body.data.ok, false);
      assert.ok(!t.text.includes(SECRET_BODY), `the peer's body leaked: ${t.text}`);
      seen.add(t.body.data.error);
    }
    assert.ok([...seen].every((e) => /^the S3 endpoint (refused the credentials|answered with an error \(HTTP \d+\)|did not answer like an S3 server)$/.test(e)), [...seen].join(' | '));
  });

  it('a listed database host: pg_dump failures say "could not connect to the database" whether the port is closed or speaks something else', async () => {
    const p = await createProjectWithVolume(server, owner);
    const closed = await tripwire();
    const closedPort = closed.port;
    await closed.close();
    const open = new Set<net.Socket>();
    const babbler = net.createServer((s) => {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.end('HTTP/1.1 400 Bad Request\r\n\r\nnot a database ' + SECRET_BODY);
    });
    await new Promise<void>((r) => babbler.listen(0, '127.0.0.1', r));
    const errors: string[] = [];
    try {
      for (const [name, port] of [
        ['closed', closedPort],
        ['babbler', (babbler.address() as net.AddressInfo).port],
      ] as const) {
        const svc = await server.api(owner.token).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name, connectionUrl: `postgres://u:pw@127.0.0.1:${port}/db` });
        assert.equal(svc.status, 201, svc.text);
        const dest = await createDestination(server, owner);
        const pol = await createPolicy(server, owner, p, { destinationId: dest.id, serviceId: svc.body.data.id });
        const runId = (await server.api(owner.token).post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
        const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 30000);
        assert.equal(run.status, 'failed');
        assert.ok(!String(run.error).includes(SECRET_BODY));
        errors.push(run.error);
      }
    } finally {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => babbler.close(() => r()));
    }
    assert.equal(errors[0], 'could not connect to the database');
    assert.equal(errors[1], errors[0], 'a closed port and a listening one look the same');
  });
});
