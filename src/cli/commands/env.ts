import { chmodSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { savedClient } from '../client.js';
import { resolveProject } from '../link.js';
import { action, note, printJson, printTable } from '../output.js';
import { seg } from './shared.js';

/** An env var as the API shows it (contract section 5): a secret's value is always the mask. */
interface EnvVar {
  key: string;
  value: string;
  isSecret: boolean;
  environment: string;
  updatedAt: string;
}

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

/** `berth env list|set|unset|pull`. */
export function registerEnvCommands(program: Command): void {
  const env = program.command('env').description("a project's environment variables");
  const environment = ['-e, --environment <name>', 'environment', 'production'] as const;

  env
    .command('list <project>')
    .alias('ls')
    .description('list variables (secret values are masked)')
    .option(...environment)
    .option('--json', 'print JSON')
    .action(
      action(async (ref: string, opts: { environment: string; json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const vars = await client.request<EnvVar[]>('GET', `/api/projects/${seg(p.id)}/env?environment=${encodeURIComponent(opts.environment)}`);
        if (opts.json) return printJson(vars);
        if (vars.length === 0) return void console.log(`no variables in ${p.slug} (${opts.environment})`);
        printTable([['KEY', 'VALUE', ''], ...vars.map((v) => [v.key, v.value, v.isSecret ? 'secret' : ''])]);
      }),
    );

  env
    .command('set <project> <pairs...>')
    .description('set KEY=VALUE pairs (only these keys change)')
    .option(...environment)
    .option('-s, --secret', 'store the values as secrets')
    .action(
      action(async (ref: string, pairs: string[], opts: { environment: string; secret?: boolean }) => {
        const upserts = parsePairs(pairs, !!opts.secret);
        const client = savedClient();
        const p = await resolveProject(client, ref);
        await client.request('PATCH', `/api/projects/${seg(p.id)}/env`, { environment: opts.environment, upserts, deletes: [] });
        console.log(`set ${upserts.map((u) => u.key).join(', ')} on ${p.slug} (${opts.environment})`);
      }),
    );

  env
    .command('unset <project> <keys...>')
    .description('delete variables (only these keys change)')
    .option(...environment)
    .action(
      action(async (ref: string, keys: string[], opts: { environment: string }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        await client.request('PATCH', `/api/projects/${seg(p.id)}/env`, { environment: opts.environment, upserts: [], deletes: keys });
        console.log(`removed ${keys.join(', ')} from ${p.slug} (${opts.environment})`);
      }),
    );

  env
    .command('pull <project> [file]')
    .description(`write a project's variables to a .env file (default ${DEFAULT_ENV_FILE}, mode 0600); secrets as empty KEY= lines`)
    .option(...environment)
    .option('-y, --yes', 'overwrite the file when it exists')
    .option('--json', 'print JSON: { project, environment, file, entries } (entries: { key, value, isSecret }, a secret\'s value null)')
    .action(
      action(async (ref: string, fileArg: string | undefined, opts: { environment: string; yes?: boolean; json?: boolean }) => {
        const file = path.resolve(fileArg ?? DEFAULT_ENV_FILE);
        if (!opts.yes && existsSync(file)) throw new Error(`${file} exists: pass --yes to overwrite it, or name another file`);
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const vars = await client.request<EnvVar[]>('GET', `/api/projects/${seg(p.id)}/env?environment=${encodeURIComponent(opts.environment)}`);
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
      }),
    );
}
