import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, resolveSecretKey } from '../../src/config.js';
import { decryptSecret, encryptSecret, hashPassword, Keyring, safeEqual, verifyPassword } from '../../src/lib/crypto.js';
import { tempDir } from '../support/harness.js';

describe('secrets at rest', () => {
  const ring = new Keyring(randomBytes(32));

  it('AES-256-GCM round-trips, with a random IV each time and the key id in the sealed value', () => {
    const a = encryptSecret(ring, 's3cr3t-value', 'env:prj_1:production:API_KEY');
    const b = encryptSecret(ring, 's3cr3t-value', 'env:prj_1:production:API_KEY');
    assert.notEqual(a, b);
    assert.ok(!a.includes('s3cr3t'));
    assert.equal(a.split('.')[1], ring.current.id);
    assert.equal(Buffer.from(a.split('.')[2]!, 'base64url').length, 12, '96-bit IV');
    assert.equal(decryptSecret(ring, a, 'env:prj_1:production:API_KEY'), 's3cr3t-value');
  });

  it('a value moved to another owner or name does not decrypt (additional data binds them)', () => {
    const sealed = encryptSecret(ring, 'v', 'env:prj_1:production:A');
    assert.throws(() => decryptSecret(ring, sealed, 'env:prj_2:production:A'));
    assert.throws(() => decryptSecret(ring, sealed, 'env:prj_1:production:B'));
  });

  it('a tampered value does not decrypt', () => {
    const sealed = encryptSecret(ring, 'value', 'x');
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[4]!, 'base64url');
    ct[0]! ^= 1;
    parts[4] = ct.toString('base64url');
    assert.throws(() => decryptSecret(ring, parts.join('.'), 'x'));
  });

  it('old keys stay readable after rotation by key id', () => {
    const oldKey = randomBytes(32);
    const sealed = encryptSecret(new Keyring(oldKey), 'kept', 'aad');
    const rotated = new Keyring(randomBytes(32), [oldKey]);
    assert.equal(decryptSecret(rotated, sealed, 'aad'), 'kept');
    assert.throws(() => decryptSecret(new Keyring(randomBytes(32)), sealed, 'aad'), /no key/);
  });

  it('the key is generated once into <data-dir>/secret.key with mode 0600 and reused', () => {
    const dir = tempDir();
    const cfg = loadConfig({ dataDir: dir }, {});
    const k1 = resolveSecretKey(cfg);
    const file = path.join(dir, 'secret.key');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length, 32);
    assert.deepEqual(resolveSecretKey(cfg), k1);
  });

  it('a too-short BERTH_SECRET_KEY stops start-up with a clear message', () => {
    assert.throws(() => loadConfig({}, { BERTH_SECRET_KEY: randomBytes(16).toString('base64') }), (e: Error) => e instanceof ConfigError && /too short/.test(e.message));
    assert.throws(() => loadConfig({}, { BERTH_SECRET_KEY: 'not base64 !!' }), ConfigError);
    assert.equal(loadConfig({}, { BERTH_SECRET_KEY: randomBytes(32).toString('base64') }).secretKey!.length, 32);
  });
});

describe('passwords and tokens', () => {
  it('scrypt hashes verify the right password only', async () => {
    const h = await hashPassword('correct horse');
    assert.match(h, /^scrypt\$/);
    assert.ok(await verifyPassword('correct horse', h));
    assert.ok(!(await verifyPassword('wrong horse', h)));
    assert.ok(!(await verifyPassword('x', null)));
  });

  it('safeEqual compares strings of any length without throwing', () => {
    assert.ok(safeEqual('abc', 'abc'));
    assert.ok(!safeEqual('abc', 'abcd'));
    assert.ok(!safeEqual('', 'a'));
  });
});

describe('configuration', () => {
  it('flags win over environment variables, which win over defaults', () => {
    const d = loadConfig({}, {});
    assert.equal(d.host, '127.0.0.1');
    assert.equal(d.port, 7300);
    assert.equal(d.mode, 'self-hosted');
    assert.equal(d.edgePort, 7380);
    assert.equal(d.appsDomain, 'localhost');
    const e = loadConfig({}, { BERTH_PORT: '8000', BERTH_MODE: 'cloud' });
    assert.equal(e.port, 8000);
    assert.equal(e.mode, 'cloud');
    const f = loadConfig({ port: '9000', mode: 'self-hosted' }, { BERTH_PORT: '8000', BERTH_MODE: 'cloud' });
    assert.equal(f.port, 9000);
    assert.equal(f.mode, 'self-hosted');
    assert.equal(loadConfig({ port: '0' }, {}).port, 0);
  });

  it('bad values are refused with the name of the setting', () => {
    assert.throws(() => loadConfig({ port: '70000' }, {}), /port/);
    assert.throws(() => loadConfig({ mode: 'hybrid' }, {}), /mode/);
    assert.throws(() => loadConfig({}, { DATABASE_URL: 'mysql://x' }), /DATABASE_URL/);
  });
});
