import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serviceVariables, urlVariableOf } from '../../src/modules/services/index.js';

/** Contract section 19's variables for a project's managed services (issue 37 point 3, the naming). */
describe('the variables of managed services', () => {
  const pg = { kind: 'postgres' as const, name: 'main-db', host: '10.88.0.6', port: 5432, credentials: { username: 'app', password: 'pw1', database: 'main_db' } };
  const maria = { kind: 'mysql' as const, name: 'legacy', host: '10.88.0.10', port: 3306, credentials: { username: 'app', password: 'pw2', database: 'legacy' } };
  const redis = { kind: 'redis' as const, name: 'cache', host: '10.88.0.14', port: 6379, credentials: { username: 'default', password: 'pw3', database: '0' } };

  it('DATABASE_URL is the first SQL database, with PG parts for postgres; REDIS_URL; <NAME>_URL for each', () => {
    const { env, secrets } = serviceVariables([pg, maria, redis]);
    assert.equal(env.DATABASE_URL, 'postgres://app:pw1@10.88.0.6:5432/main_db');
    assert.equal(env.MAIN_DB_URL, env.DATABASE_URL);
    assert.equal(env.LEGACY_URL, 'mysql://app:pw2@10.88.0.10:3306/legacy');
    assert.equal(env.REDIS_URL, 'redis://default:pw3@10.88.0.14:6379/0');
    assert.equal(env.CACHE_URL, env.REDIS_URL);
    assert.deepEqual([env.PGHOST, env.PGPORT, env.PGUSER, env.PGPASSWORD, env.PGDATABASE], ['10.88.0.6', '5432', 'app', 'pw1', 'main_db']);
    assert.equal(env.MONGODB_URL, undefined);
    for (const p of ['pw1', 'pw2', 'pw3']) assert.ok(secrets.includes(p), `${p} is redacted`);
  });

  it('a MariaDB first is DATABASE_URL, without PG parts; a service named like a shared variable does not override it', () => {
    const { env } = serviceVariables([maria, { ...pg, name: 'database' }]);
    assert.equal(env.DATABASE_URL, 'mysql://app:pw2@10.88.0.10:3306/legacy');
    assert.equal(env.PGHOST, undefined);
    assert.equal(urlVariableOf('my-cache_2'), 'MY_CACHE_2_URL');
  });
});
