import { chmodSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { answer, savedClient, type Answered, type ApiClient } from '../client.js';
import { followDeployment, type Outcome } from '../deploy.js';
import { lookupProject, readLink, resolveProject, sameServer, type ProjectSummary } from '../link.js';
import { action, note, printJson, printTable, UsageError } from '../output.js';

/** An env var as the API shows it (contract section 5): a secret's value is always the mask. */
type EnvVar = Answered<'/api/projects/{id}/env', 'get'>[number];

/** Where `berth env pull` writes by default: what Next.js, Vite and others read, and what their templates gitignore. */
export const DEFAULT_ENV_FILE = '.env.local';

const BARE = /^[A-Za-z0-9_./:@%+,=-]*$/;

/**
 * One value as dotenv text that the common parsers (the `dotenv` package, Node's `--env-file` and
 * `util.parseEnv`) read back unchanged: bare when it is plain; in single quotes (literal) when it
 * has no `'` or line break; in double quotes (which may span lines, but turn a written `\n` into a
 * line break) when it has no `"` and no `\n` text; else in backquotes. Answers null when no quoting
 * keeps it whole (a value holding `'`, `"` and a backquote across lines).
 */
export function dotenvValue(value: string): string | null {
  if (BARE.test(value)) return value;
  const multiline = /[\r\n]/.test(value);
  if (!multiline && !value.includes("'")) return `'${value}'`;
  if (!value.includes('"') && !value.includes('\\n')) return `"${value}"`;
  if (!value.includes('`')) return `\`${value}\``;
  return null;
}

/** The file `berth env pull` writes: plain values as `KEY=value`, secrets as empty `KEY=` lines under a comment. */
export function dotenvText(vars: EnvVar[], header: string): { text: string; unwritable: string[] } {
  const lines = [`# ${header}`, '# Secret values are never sent by the server: their lines are left empty for you to fill in.', ''];
  const unwritable: string[] = [];
  for (const v of [...vars].sort((a, b) => a.key.localeCompare(b.key))) {
    if (v.isSecret) {
      lines.push(`# ${v.key} is a secret: its value is not shown`, `${v.key}=`);
      continue;
    }
    const q = dotenvValue(v.value);
    if (q === null) {
      unwritable.push(v.key);
      lines.push(`# ${v.key}: its value mixes quotes and line breaks that no .env quoting keeps whole; read it with berth env list`, `${v.key}=`);
    } else lines.push(`${v.key}=${q}`);
  }
  return { text: lines.join('\n') + '\n', unwritable };
}

/** Writes `text` to `file` with mode 0600: a fresh file, or (overwrite) a temporary one renamed over it. */
function writePrivate(file: string, text: string, overwrite: boolean): void {
  if (!overwrite) {
    writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
    return;
  }
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

function parsePairs(pairs: string[], secret: boolean) {
  return pairs.map((pair) => {
    const i = pair.indexOf('=');
    if (i <= 0) throw new Error(`"${pair}" is not KEY=VALUE`);
    return { key: pair.slice(0, i), value: pair.slice(i + 1), isSecret: secret };
  });
}

/**
 * The project of `berth env set|unset|pull` and the other arguments. `--project` names it when
 * given; else a first argument names it when it cannot be one of the others (`set`: a pair holds
 * `=`) or, in a folder linked by `berth deploy`, when it names a project you can read; else the
 * folder's linked project is used (a usage error outside a linked folder) and every argument is a
 * pair, key or file.
 */
async function projectAndArgs(client: ApiClient, args: string[], opts: { project?: string }, isArg: (a: string) => boolean): Promise<{ project: ProjectSummary; rest: string[] }> {
  if (opts.project) return { project: await resolveProject(client, opts.project), rest: args };
  const [first, ...others] = args;
  if (first !== undefined && !isArg(first)) {
    const link = readLink(process.cwd());
    const linkedHere = !!link && sameServer(link.server, client.server);
    const named = linkedHere ? await lookupProject(client, first) : null;
    if (!linkedHere || named) return { project: named ?? (await resolveProject(client, first)), rest: others };
  }
  return { project: await resolveProject(client, undefined), rest: args };
}

const hasEquals = (a: string): boolean => a.includes('=');
const never = (): boolean => false;

interface EnvWriteOptions {
  environment: string;
  project?: string;
  json?: boolean;
}

/**
 * `env set|unset --redeploy`: starts a deployment of the environment from the project's current
 * source and follows it like `berth deploy` (build log streamed, the URL last); exit 0 when ready.
 */
async function redeploy(client: ApiClient, p: ProjectSummary, environment: string, json: boolean): Promise<Outcome> {
  const queued = await answer(client.api.POST('/api/deployments', { body: { projectId: p.id, environment } }));
  note(`deployment ${queued.id} ${queued.status} (${environment}): redeploying with the new variables`);
  const waiting = new AbortController();
  const onSigint = () => waiting.abort();
  process.on('SIGINT', onSigint);
  try {
    return await followDeployment(client, p, queued, json ? process.stderr : process.stdout, waiting.signal);
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/** Ends `env set|unset`: the JSON or the line, then a redeploy (`--redeploy`) or the hint that one is needed. */
async function afterChange(client: ApiClient, p: ProjectSummary, opts: EnvWriteOptions & { redeploy?: boolean }, change: { set?: string[]; removed?: string[] }, line: string): Promise<void> {
  const outcome = opts.redeploy ? await redeploy(client, p, opts.environment, !!opts.json) : null;
  if (opts.json) printJson({ project: p.id, environment: opts.environment, ...change, deployment: outcome?.deployment ?? null, url: outcome?.url ?? null });
  else {
    if (!outcome) console.log(line);
    else if (outcome.url) console.log(outcome.url);
  }
  if (!outcome) {
    const envFlag = opts.environment === 'production' ? '' : ` --env ${opts.environment}`;
    note(`the running app keeps the old values until its next deployment: pass --redeploy, or run \`berth deploy${envFlag}\``);
    return;
  }
  // As `berth deploy`: open keep-alive sockets must not hold the process once the outcome is known.
  process.exit(outcome.code);
}

/** `berth env list|set|unset|pull`. */
export function registerEnvCommands(program: Command): void {
  const env = program.command('env').description("a project's environment variables (PROJECT defaults to this folder's linked project)");
  const environment = ['-e, --environment <name>', 'environment', 'production'] as const;
  const project = ['-p, --project <project>', 'the project (id, slug or name); default: the first argument when it names one, else this folder\'s project'] as const;

  env
    .command('list [project]')
    .alias('ls')
    .description('list variables (secret values are masked)')
    .option(...environment)
    .option('--json', 'print JSON')
    .action(
      action(async (ref: string | undefined, opts: { environment: string; json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const vars = await readVars(client, p, opts.environment);
        if (opts.json) return printJson(vars);
        if (vars.length === 0) return void console.log(`no variables in ${p.slug} (${opts.environment})`);
        printTable([['KEY', 'VALUE', ''], ...vars.map((v) => [v.key, v.value, v.isSecret ? 'secret' : ''])]);
      }),
    );

  env
    .command('set <args...>')
    .usage('[PROJECT] KEY=VALUE... [options]')
    .description('set KEY=VALUE pairs (only these keys change); the app gets them at its next deployment (--redeploy starts one)')
    .option(...environment)
    .option(...project)
    .option('-s, --secret', 'store the values as secrets')
    .option('--redeploy', 'deploy the environment again now and follow it like `berth deploy`')
    .option('--json', 'print JSON: { project, environment, set, deployment, url }')
    .action(
      action(async (args: string[], opts: EnvWriteOptions & { secret?: boolean; redeploy?: boolean }) => {
        const client = savedClient();
        const { project: p, rest } = await projectAndArgs(client, args, opts, hasEquals);
        if (rest.length === 0) throw new UsageError('name at least one KEY=VALUE pair');
        const upserts = parsePairs(rest, !!opts.secret);
        await answer(client.api.PATCH('/api/projects/{id}/env', { params: { path: { id: p.id } }, body: { environment: opts.environment, upserts, deletes: [] } }));
        const keys = upserts.map((u) => u.key);
        await afterChange(client, p, opts, { set: keys }, `set ${keys.join(', ')} on ${p.slug} (${opts.environment})`);
      }),
    );

  env
    .command('unset <args...>')
    .usage('[PROJECT] KEY... [options]')
    .description('delete variables (only these keys change); the app loses them at its next deployment (--redeploy starts one)')
    .option(...environment)
    .option(...project)
    .option('--redeploy', 'deploy the environment again now and follow it like `berth deploy`')
    .option('--json', 'print JSON: { project, environment, removed, deployment, url }')
    .action(
      action(async (args: string[], opts: EnvWriteOptions & { redeploy?: boolean }) => {
        const client = savedClient();
        const { project: p, rest: keys } = await projectAndArgs(client, args, opts, never);
        if (keys.length === 0) throw new UsageError('name at least one KEY to remove');
        await answer(client.api.PATCH('/api/projects/{id}/env', { params: { path: { id: p.id } }, body: { environment: opts.environment, upserts: [], deletes: keys } }));
        await afterChange(client, p, opts, { removed: keys }, `removed ${keys.join(', ')} from ${p.slug} (${opts.environment})`);
      }),
    );

  env
    .command('pull [args...]')
    .usage('[PROJECT] [FILE] [options]')
    .description(`write a project's variables to a .env file (default ${DEFAULT_ENV_FILE}, mode 0600); secrets as empty KEY= lines`)
    .option(...environment)
    .option(...project)
    .option('-y, --yes', 'overwrite the file when it exists')
    .option('--json', 'print JSON: { project, environment, file, entries } (entries: { key, value, isSecret }, a secret\'s value null)')
    .action(
      action(async (args: string[], opts: EnvWriteOptions & { yes?: boolean }) => {
        const client = savedClient();
        const { project: p, rest } = await projectAndArgs(client, args, opts, never);
        if (rest.length > 1) throw new UsageError(`too many arguments: ${rest.join(' ')} (PROJECT and FILE at most)`);
        await pull(client, p, rest[0], opts);
      }),
    );
}

/** The variables of one environment of a project (secret values masked). */
function readVars(client: ApiClient, p: ProjectSummary, environment: string): Promise<EnvVar[]> {
  return answer(client.api.GET('/api/projects/{id}/env', { params: { path: { id: p.id }, query: { environment } } }));
}

/** `berth env pull`: reads the variables and writes the file. */
async function pull(client: ApiClient, p: ProjectSummary, fileArg: string | undefined, opts: EnvWriteOptions & { yes?: boolean }): Promise<void> {
  const file = path.resolve(fileArg ?? DEFAULT_ENV_FILE);
  if (!opts.yes && existsSync(file)) throw new Error(`${file} exists: pass --yes to overwrite it, or name another file`);
  const vars = await readVars(client, p, opts.environment);
  const { text, unwritable } = dotenvText(vars, `${p.slug} (${opts.environment}), pulled by \`berth env pull\` at ${new Date().toISOString()}`);
  try {
    writePrivate(file, text, !!opts.yes);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${file} exists: pass --yes to overwrite it, or name another file`);
    throw e;
  }
  for (const k of unwritable) note(`warning: ${k} was left empty: its value cannot be quoted in a .env file`);
  const secrets = vars.filter((v) => v.isSecret).length;
  if (opts.json) {
    return printJson({
      project: p.id,
      environment: opts.environment,
      file,
      entries: vars.map((v) => ({ key: v.key, value: v.isSecret ? null : v.value, isSecret: v.isSecret })),
    });
  }
  console.log(`wrote ${vars.length} variable${vars.length === 1 ? '' : 's'} of ${p.slug} (${opts.environment}) to ${path.relative(process.cwd(), file) || file}${secrets ? ` (${secrets} secret${secrets === 1 ? '' : 's'} left empty)` : ''}`);
}
