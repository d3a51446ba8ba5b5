import { Command, Option } from 'commander';
import { ConfigError } from '../config-error.js';
import { AppError } from '../lib/errors.js';
import { LockHeldError } from '../lib/lockfile.js';
import { answer, ApiError, apiClient, readClientConfig, savedClient, writeClientConfig } from './client.js';
import { promptHidden, readStdin } from './prompt.js';
import { registerClientCommands } from './commands.js';
import { registerDeployCommand } from './deploy.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail as failWith, printJson } from './output.js';

/**
 * The `berth` command tree (docs/cli.md): `serve` and `admin`, which import the server, the store
 * and the modules only when they run (so the client commands start in a fraction of the time), and
 * the client commands, which speak only the public HTTP API. index.ts parses the arguments with it;
 * tests walk it (every command that prints data takes `--json`).
 */
export function buildProgram(): Command {
  const program = new Command();
  program.name('berth').description('Berth: a self-hostable deployment platform').version('0.1.0');
  // `berth --version` is the program's; after a command, `--version` is that command's (services create).
  program.enablePositionalOptions();
  // Usage errors (unknown command or option, missing argument, bad choice) exit 2; help and version 0.
  program.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT_OK : EXIT_USAGE));
  registerOperatorCommands(program);
  registerAccountCommands(program);
  registerTokenCommands(program);
  // deploy first: it is what most people run, and `berth --help` lists commands in this order.
  registerDeployCommand(program);
  registerClientCommands(program);
  return program;
}

/** Ends a command on an error; the store's AppError (serve, admin) prints like the API's. */
function fail(e: unknown): never {
  if (e instanceof AppError) {
    console.error(`error: ${e.message}${e.field ? ` (field: ${e.field})` : ''}`);
    process.exit(EXIT_FAILED);
  }
  return failWith(e);
}

/** `serve` and `admin create-user`: they run on the server's machine and import the server lazily. */
function registerOperatorCommands(program: Command): void {
  program
    .command('serve')
    .description('run the API server (and the edge proxy and workers)')
    .option('--host <host>', 'listen address of the API (BERTH_HOST)')
    .option('--port <port>', 'API port; 0 picks a free one (BERTH_PORT)')
    .option('--data-dir <dir>', 'SQLite file, secret key, uploads, builds, volumes (BERTH_DATA_DIR)')
    .addOption(new Option('--mode <mode>', 'self-hosted or cloud (BERTH_MODE)').choices(['self-hosted', 'cloud']))
    .option('--edge-port <port>', 'port of the edge proxy (BERTH_EDGE_PORT)')
    .addOption(new Option('--runtime <driver>', 'how builds and apps run (BERTH_RUNTIME)').choices(['sandbox', 'docker', 'process']))
    .action(async (opts) => {
      try {
        const [{ loadConfig }, { serveForever }] = await Promise.all([import('../config.js'), import('../server.js')]);
        await serveForever(loadConfig(opts));
      } catch (e) {
        if (e instanceof ConfigError || e instanceof LockHeldError) {
          console.error(`error: ${e.message}`);
          process.exit(1);
        }
        if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          console.error(`error: ${(e as Error).message}: another program is using that port (pick another with --port)`);
          process.exit(1);
        }
        fail(e);
      }
    });

  const admin = program.command('admin').description('operator commands (work while the server runs)');
  admin
    .command('create-user')
    .description('create a user (and an org, or join one) and print {"userId","orgId","token"}')
    .option('--data-dir <dir>', 'data dir of the instance (BERTH_DATA_DIR)')
    .requiredOption('--email <email>', 'email address')
    .option('--password <password>', 'password (none: the user signs in with the printed token only)')
    .option('--name <name>', 'display name')
    .option('--org <orgId>', 'join this org instead of making a new one')
    .addOption(new Option('--role <role>', 'role in --org').choices(['owner', 'admin', 'member', 'restricted']))
    .option('--team', 'make the new org a team')
    .option('--existing', 'the email may already have an account: add it to --org (or a new org) and set --password when given')
    .option('--json', 'print JSON (what it always prints: one line)')
    .action(async (opts) => {
      try {
        const [{ loadConfig }, { migrateToLatest, openDatabase }, { adminCreateUser }] = await Promise.all([import('../config.js'), import('../db/client.js'), import('../modules/auth/index.js')]);
        const config = loadConfig({ dataDir: opts.dataDir });
        const database = openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
        try {
          await migrateToLatest(database.db);
          const out = await adminCreateUser(
            { db: database.db },
            { email: opts.email, password: opts.password, name: opts.name, orgId: opts.org, role: opts.role, team: !!opts.team, existing: !!opts.existing },
          );
          process.stdout.write(JSON.stringify(out) + '\n');
        } finally {
          await database.close();
        }
      } catch (e) {
        fail(e);
      }
    });
}

/** `login`, `whoami`: the saved login. */
function registerAccountCommands(program: Command): void {
  program
    .command('login')
    .description('sign in to a Berth server and save a personal access token in ~/.config/berth/')
    .requiredOption('--server <url>', 'the server, e.g. http://127.0.0.1:7300')
    .requiredOption('--email <email>', 'your email')
    .option('--password-stdin', 'read the password from standard input')
    .option('--json', 'print JSON: { server, email } (the token is saved, never printed)')
    .action(async (opts) => {
      try {
        const password = opts.passwordStdin ? await readStdin() : await promptHidden('Password: ');
        const server = String(opts.server).replace(/\/+$/, '');
        const res = await fetch(`${server}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: opts.email, password }),
        });
        const body = (await res.json().catch(() => ({}))) as any;
        if (!res.ok) throw new ApiError(res.status, body?.error?.code ?? 'HTTP_' + res.status, body?.error?.message ?? res.statusText);
        const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
        const client = apiClient(server);
        const host = (await import('node:os')).hostname();
        const tok = await answer(client.api.POST('/api/auth/tokens', { body: { name: `cli on ${host}`.slice(0, 100) }, headers: { cookie, origin: new URL(server).origin } }));
        await fetch(`${server}/api/auth/logout`, { method: 'POST', headers: { cookie, origin: new URL(server).origin } }).catch(() => {});
        writeClientConfig({ ...readClientConfig(), server, token: tok.token, email: opts.email });
        const email = body.data?.user?.email ?? opts.email;
        if (opts.json) printJson({ server, email });
        else console.log(`logged in to ${server} as ${email}`);
      } catch (e) {
        fail(e);
      }
    });

  program
    .command('whoami')
    .description('show the signed-in user, org and role')
    .option('--json', 'print JSON: { user, org, role, orgs } as GET /api/auth/me answers')
    .action(async (opts: { json?: boolean }) => {
      try {
        const me = await answer(savedClient().api.GET('/api/auth/me'));
        if (opts.json) return printJson(me);
        console.log(`${me.user.email} in ${me.org?.name ?? '?'} (${me.org?.id ?? '?'}) as ${me.role}`);
      } catch (e) {
        fail(e);
      }
    });
}

/** `token create|list|revoke`: personal access tokens of the signed-in user. */
function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('personal access tokens');
  token
    .command('create')
    .description('create a personal access token and print it (shown once)')
    .requiredOption('--name <name>', 'a name to recognise it by')
    .option('--expires-in-days <days>', 'lifetime in days', (v) => Number(v))
    .option('--scopes <tags...>', 'narrow it to these permission tags, e.g. project:read')
    .option('--json', 'print JSON: the token record with the token (shown once)')
    .action(async (opts) => {
      try {
        const t = await answer(
          savedClient().api.POST('/api/auth/tokens', {
            body: { name: opts.name, ...(opts.expiresInDays ? { expiresInDays: opts.expiresInDays } : {}), ...(opts.scopes ? { scopes: opts.scopes } : {}) },
          }),
        );
        if (opts.json) return printJson(t);
        console.log(t.token);
      } catch (e) {
        fail(e);
      }
    });
  token
    .command('list')
    .description('list your tokens (no secrets)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      try {
        const list = await answer(savedClient().api.GET('/api/auth/tokens'));
        if (opts.json) return printJson(list);
        for (const t of list) console.log(`${t.id}  ${t.prefix}…  ${t.name}${t.revokedAt ? '  (revoked)' : ''}${t.expiresAt ? `  expires ${t.expiresAt}` : ''}`);
      } catch (e) {
        fail(e);
      }
    });
  token
    .command('revoke <id>')
    .description('revoke one of your tokens')
    .option('--json', 'print JSON: the answer')
    .action(async (id: string, opts: { json?: boolean }) => {
      try {
        const out = await answer(savedClient().api.DELETE('/api/auth/tokens/{id}', { params: { path: { id } } }));
        if (opts.json) return printJson(out ?? { id, revoked: true });
        console.log(`revoked ${id}`);
      } catch (e) {
        fail(e);
      }
    });
}
