import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Command } from 'commander';
import { answer, apiErrorFrom, savedClient, type ApiClient } from '../client.js';
import { resolveProject } from '../link.js';
import { action, EXIT_FAILED, note } from '../output.js';
import { findService, type Service } from './services-find.js';
import { seg } from './shared.js';

/**
 * `berth services connect PROJECT NAME [--command TEXT]`: the database's own client (`psql`, `mysql`,
 * `redis-cli`) on this machine, through an authenticated tunnel of the API (POST
 * .../services/:sid/tunnel upgraded to raw TCP; no port is opened on the server's host). The command
 * listens on an ephemeral port of 127.0.0.1, relays each connection the client makes there through a
 * tunnel of its own, and runs the client with an argument array pointed at it; the password goes to
 * the client through its environment (PGPASSWORD, MYSQL_PWD, REDISCLI_AUTH), never its arguments.
 */

const PROTOCOL = 'berth-tcp';

interface Credentials {
  username: string;
  password: string;
  database: string;
}

/** The client program, its arguments and environment for a service of `kind` reached at 127.0.0.1:`port`. */
export function clientCommand(kind: Service['kind'], port: number, c: Credentials, command: string | undefined): { program: string; args: string[]; env: Record<string, string>; install: string } {
  const p = String(port);
  switch (kind) {
    case 'postgres':
      return { program: 'psql', args: ['-h', '127.0.0.1', '-p', p, '-U', c.username, '-d', c.database, ...(command !== undefined ? ['-c', command] : [])], env: { PGPASSWORD: c.password }, install: 'postgresql-client' };
    case 'mysql':
      return { program: 'mysql', args: ['--protocol=TCP', '-h', '127.0.0.1', '-P', p, '-u', c.username, ...(command !== undefined ? ['-e', command] : []), c.database], env: { MYSQL_PWD: c.password }, install: 'mariadb-client' };
    case 'redis':
      // redis-cli takes the command as its arguments (`get key`), split on blanks.
      return { program: 'redis-cli', args: ['--no-auth-warning', '-h', '127.0.0.1', '-p', p, ...(command !== undefined ? command.split(/\s+/).filter(Boolean) : [])], env: { REDISCLI_AUTH: c.password }, install: 'redis-tools' };
    default:
      throw new Error(`berth services connect does not open ${kind} services yet`);
  }
}

/** One tunnel to the service: a socket relaying raw bytes once the server answered 101 (its error envelope otherwise). */
function openTunnel(client: ApiClient, token: string | undefined, path: string): Promise<{ socket: net.Socket; head: Buffer }> {
  const url = new URL(client.server + path);
  const request = (url.protocol === 'https:' ? https : http).request;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), connection: 'Upgrade', upgrade: PROTOCOL, 'content-length': '0' } });
    req.on('upgrade', (_res, socket, head) => resolve({ socket, head }));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => reject(apiErrorFrom(res.statusCode ?? 0, res.statusMessage ?? '', text)));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Serves 127.0.0.1:ephemeral, each connection relayed through a tunnel of its own (`first` for the first one). */
async function listenLocally(first: { socket: net.Socket; head: Buffer }, open: () => Promise<{ socket: net.Socket; head: Buffer }>): Promise<{ port: number; close(): void }> {
  let spare: { socket: net.Socket; head: Buffer } | null = first;
  const live = new Set<net.Socket>();
  const server = net.createServer((local) => {
    live.add(local);
    local.on('close', () => live.delete(local));
    local.on('error', () => local.destroy());
    const take = spare ? Promise.resolve(spare) : open();
    spare = null;
    take.then(
      ({ socket, head }) => {
        live.add(socket);
        const end = () => (local.destroy(), socket.destroy());
        socket.on('error', end).on('close', end);
        local.on('close', end);
        if (head.length) local.write(head);
        local.pipe(socket);
        socket.pipe(local);
      },
      (e: Error) => {
        note(`error: the tunnel did not open: ${e.message}`);
        local.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    close() {
      server.close();
      spare?.socket.destroy();
      for (const s of live) s.destroy();
    },
  };
}

export function registerConnectCommand(services: Command): void {
  services
    .command('connect <project> <name>')
    .description("open the database's client (psql, mysql, redis-cli) through an authenticated tunnel of the API (needs admin on the project)")
    .option('-c, --command <text>', 'run this (SQL, or a Redis command) and exit instead of opening an interactive shell')
    .action(
      action(async (ref: string, name: string, opts: { command?: string }) => {
        const client = savedClient();
        const token = client.token;
        const p = await resolveProject(client, ref);
        const s = await findService(client, p, name);
        if (s.status !== 'running') throw new Error(`service ${s.name} is ${s.status}: it must be running to connect (berth services ls ${p.slug})`);
        const creds = await answer(client.api.GET('/api/projects/{id}/services/{sid}/credentials', { params: { path: { id: p.id, sid: s.id } } }));
        const path = `/api/projects/${seg(p.id)}/services/${seg(s.id)}/tunnel`;
        // The first tunnel is opened now: a refusal is said before any client starts.
        const first = await openTunnel(client, token, path);
        const local = await listenLocally(first, () => openTunnel(client, token, path));
        let cmd: ReturnType<typeof clientCommand>;
        try {
          cmd = clientCommand(s.kind, local.port, creds, opts.command);
        } catch (e) {
          local.close();
          throw e;
        }
        if (process.stderr.isTTY && opts.command === undefined) note(`connected to ${s.kind} ${s.name} of ${p.slug} through ${client.server}`);
        // Ctrl-C belongs to the client (psql cancels a query with it): the relay stays up until it exits.
        const ignore = () => {};
        process.on('SIGINT', ignore);
        const code = await new Promise<number>((resolve) => {
          const child = spawn(cmd.program, cmd.args, { stdio: 'inherit', env: { ...process.env, ...cmd.env } });
          child.on('error', (e: NodeJS.ErrnoException) => {
            note(e.code === 'ENOENT' ? `error: ${cmd.program} is not installed here (Debian: apt-get install ${cmd.install})` : `error: ${cmd.program}: ${e.message}`);
            resolve(EXIT_FAILED);
          });
          child.on('exit', (c, signal) => resolve(c ?? (signal ? EXIT_FAILED : 0)));
        });
        process.off('SIGINT', ignore);
        local.close();
        process.exitCode = code;
      }),
    );
}
