/**
 * How each kind runs from the host's Debian binaries inside a box (docs/services.md): the files made
 * before a start (in the box's read-only `/app`, the service's `conf` folder), the first-start
 * initialisation, the server's command, the readiness check and what runs once it answers. Paths are
 * as the box sees them: `/data` is the service's volume, `/app` its configuration. Sockets live in
 * `/data/run` (each process of a box has its own `/tmp`). No shell: argument arrays only, and no secret
 * in any argument (processes' command lines are visible on the host): the password reaches the server
 * through a file of `/app` that is removed once it answered, or through the environment.
 */
import path from 'node:path';
import type { Credentials } from './credentials.js';
import type { ServiceKind } from './kinds.js';
import { hostBinaries } from './kinds.js';

export interface EngineStep {
  argv: string[];
  env?: Record<string, string>;
  /** What its standard output must hold (else only its exit code counts). */
  expect?: RegExp;
}

export interface EnginePlan {
  /** Files to write into `/app` before the start (name -> text), and those holding a secret (removed once ready). */
  files: Record<string, string>;
  secretFiles: string[];
  /**
   * Runs when `initialisedMarker` (a path below the volume, host side relative) does not exist yet.
   * The runner flushes the volume's filesystem once after these steps (`syncFilesystemOf`), so a step
   * may skip its own per-file fsyncs (initdb `--no-sync`: half of its time).
   */
  init: EngineStep[];
  initialisedMarker: string;
  server: EngineStep;
  /** Exits 0 once the server answers. */
  ready: EngineStep;
  /** Runs once after the first readiness of each start (users, databases); idempotent. */
  after: EngineStep[];
}

/**
 * How long to wait before readiness check `i` of a starting server: every 100 ms for the first 3 s
 * (a small database answers within one or two seconds, and each second of polling late is a second of
 * create-to-ready), then every second.
 */
export function readyPollMs(i: number): number {
  return i < 30 ? 100 : 1000;
}

export interface PlanInput {
  /** The uid/gid the box runs as (the project's; the server's own without root). */
  uid: number;
  gid: number;
  kind: ServiceKind;
  version: string;
  port: number;
  memoryMb: number;
  credentials: Credentials;
  /** The docker runtime: programs by name from the image's PATH, and no nss_wrapper (the box names the uid). */
  inImage?: boolean;
}

/**
 * Where a kind's program is: on the host, the Debian path (PostgreSQL's of its major version); in an
 * image (docker runtime), its name, found on the image's PATH.
 */
export function programOf(kind: ServiceKind, version: string, name: string, inImage = false): string {
  if (inImage) return name;
  if (kind === 'postgres') return path.join(hostBinaries().postgresRoot, path.basename(version), 'bin', name);
  const b = hostBinaries();
  if (name === 'mariadbd') return b.mariadbd;
  if (name === 'mariadb-install-db') return b.mariadbInstallDb;
  if (name === 'redis-server') return b.redisServer;
  return `/usr/bin/${name}`;
}

const PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
const sqlIdent = (s: string) => s.replace(/[^A-Za-z0-9_]/g, '');

function postgres(i: PlanInput): EnginePlan {
  const bin = (p: string) => programOf('postgres', i.version, p, i.inImage);
  const c = i.credentials;
  const db = sqlIdent(c.database);
  const user = sqlIdent(c.username);
  // The password is hex (credentials.ts): safe inside a literal.
  const init = [
    `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${user}') THEN CREATE ROLE ${user} LOGIN; END IF; END $$;`,
    `ALTER ROLE ${user} WITH LOGIN PASSWORD '${c.password}';`,
    `SELECT 'CREATE DATABASE ${db} OWNER ${user}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '${db}')\\gexec`,
    '',
  ].join('\n');
  const sharedMb = Math.max(16, Math.floor(i.memoryMb / 4));
  // initdb and postgres look their uid up (getpwuid): the project's uid has no entry in the host's
  // /etc/passwd, so nss_wrapper (Debian: libnss-wrapper) gives it one from /app.
  // In an image the box itself names the uid (service-containers.ts).
  const nss: Record<string, string> = i.inImage ? {} : { LD_PRELOAD: hostBinaries().nssWrapper, NSS_WRAPPER_PASSWD: '/app/passwd', NSS_WRAPPER_GROUP: '/app/group' };
  return {
    files: {
      passwd: `postgres:x:${i.uid}:${i.gid}:PostgreSQL:/data:/usr/sbin/nologin\n`,
      group: `postgres:x:${i.gid}:\n`,
      // Inside the box only the service's own processes reach the socket; over TCP a password is needed.
      'pg_hba.conf': ['local all all trust', 'host all all 0.0.0.0/0 scram-sha-256', 'host all all ::/0 scram-sha-256', ''].join('\n'),
      'init.sql': init,
    },
    secretFiles: ['init.sql'],
    init: [{ argv: [bin('initdb'), '-D', '/data/pgdata', '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions', '--no-sync'], env: nss }],
    initialisedMarker: 'pgdata/PG_VERSION',
    server: {
      argv: [
        bin('postgres'),
        '-D', '/data/pgdata',
        '-p', String(i.port),
        '-c', 'listen_addresses=*',
        '-c', 'unix_socket_directories=/data/run',
        '-c', 'hba_file=/app/pg_hba.conf',
        '-c', 'dynamic_shared_memory_type=mmap',
        '-c', `shared_buffers=${sharedMb}MB`,
        '-c', 'max_connections=50',
        '-c', 'password_encryption=scram-sha-256',
      ],
      env: nss,
    },
    ready: { argv: [bin('pg_isready'), '-q', '-h', '/data/run', '-p', String(i.port), '-U', 'postgres'], env: nss },
    after: [{ argv: [bin('psql'), '-X', '-q', '-h', '/data/run', '-p', String(i.port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-f', '/app/init.sql'], env: nss }],
  };
}

function mariadb(i: PlanInput): EnginePlan {
  const bin = (p: string) => programOf('mysql', i.version, p, i.inImage);
  const c = i.credentials;
  const db = sqlIdent(c.database);
  const user = sqlIdent(c.username);
  const init = [
    `CREATE DATABASE IF NOT EXISTS \`${db}\`;`,
    `CREATE USER IF NOT EXISTS '${user}'@'%' IDENTIFIED BY '${c.password}';`,
    `ALTER USER '${user}'@'%' IDENTIFIED BY '${c.password}';`,
    `GRANT ALL PRIVILEGES ON \`${db}\`.* TO '${user}'@'%';`,
    '',
  ].join('\n');
  const poolMb = Math.max(16, Math.floor(i.memoryMb / 2));
  return {
    files: { 'init.sql': init },
    secretFiles: ['init.sql'],
    init: [{ argv: [bin('mariadb-install-db'), '--no-defaults', '--datadir=/data/mysql', '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve'] }],
    initialisedMarker: 'mysql/mysql',
    server: {
      argv: [
        bin('mariadbd'),
        '--no-defaults',
        '--datadir=/data/mysql',
        '--socket=/data/run/mysqld.sock',
        '--pid-file=/data/run/mysqld.pid',
        `--port=${i.port}`,
        '--bind-address=0.0.0.0',
        '--skip-name-resolve',
        '--skip-log-bin',
        '--innodb-use-native-aio=0',
        `--innodb-buffer-pool-size=${poolMb}M`,
        '--init-file=/app/init.sql',
      ],
    },
    ready: { argv: [bin('mariadb-admin'), '--no-defaults', '--socket=/data/run/mysqld.sock', '-uroot', 'ping'] },
    after: [],
  };
}

function redis(i: PlanInput): EnginePlan {
  const maxMb = Math.max(16, Math.floor(i.memoryMb * 0.8));
  const conf = [
    'bind 0.0.0.0',
    `port ${i.port}`,
    'protected-mode no',
    'daemonize no',
    'dir /data',
    'appendonly yes',
    'save 3600 1 300 100 60 10000',
    `maxmemory ${maxMb}mb`,
    `requirepass ${i.credentials.password}`,
    '',
  ].join('\n');
  return {
    files: { 'redis.conf': conf },
    secretFiles: ['redis.conf'],
    init: [],
    initialisedMarker: '',
    server: { argv: [programOf('redis', i.version, 'redis-server', i.inImage), '/app/redis.conf'] },
    ready: { argv: [programOf('redis', i.version, 'redis-cli', i.inImage), '--no-auth-warning', '-h', '127.0.0.1', '-p', String(i.port), 'ping'], env: { REDISCLI_AUTH: i.credentials.password }, expect: /PONG/ },
    after: [],
  };
}

/**
 * MongoDB (docker runtime only): `mongod` with authorization on; the user is made through the
 * localhost exception on the first start (no user yet) by a script of `/app` holding the password,
 * removed once ready; on later starts the script authenticates as that user instead.
 */
function mongodb(i: PlanInput): EnginePlan {
  const c = i.credentials;
  const js = (v: string) => JSON.stringify(v);
  const init = [
    "const admin = db.getSiblingDB('admin');",
    'let authed = false;',
    `try { authed = admin.auth(${js(c.username)}, ${js(c.password)}).ok === 1; } catch (e) { authed = false; }`,
    `if (!authed) admin.createUser({ user: ${js(c.username)}, pwd: ${js(c.password)}, roles: [{ role: 'root', db: 'admin' }] });`,
    '',
  ].join('\n');
  const cacheGb = Math.max(0.25, Math.floor((i.memoryMb / 2 / 1024) * 100) / 100);
  const shell = ['mongosh', '--quiet', '--norc', '--host', '127.0.0.1', '--port', String(i.port)];
  return {
    files: { 'init.js': init },
    secretFiles: ['init.js'],
    init: [{ argv: ['mkdir', '-p', '/data/db'] }],
    initialisedMarker: 'db',
    server: { argv: ['mongod', '--dbpath', '/data/db', '--port', String(i.port), '--bind_ip_all', '--auth', '--wiredTigerCacheSizeGB', String(cacheGb), '--unixSocketPrefix', '/data/run'] },
    ready: { argv: [...shell, '--eval', "db.adminCommand('ping').ok"], expect: /1/ },
    after: [{ argv: [...shell, '--file', '/app/init.js'] }],
  };
}

export function enginePlan(i: PlanInput): EnginePlan {
  switch (i.kind) {
    case 'postgres':
      return postgres(i);
    case 'mysql':
      return mariadb(i);
    case 'redis':
      return redis(i);
    case 'mongodb':
      if (!i.inImage) throw new Error('MongoDB runs only under the docker runtime');
      return mongodb(i);
  }
}

/** The environment of a service's processes (never the server's own). */
export function engineEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH, LANG: 'C.UTF-8', HOME: '/data', ...extra };
}
