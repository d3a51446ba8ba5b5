/**
 * MongoDB's database tools for backups, restores and transfers (docker runtime only; docs/services.md
 * "Backups"): `mongodump --archive --gzip` of the whole instance, `mongorestore --archive --gzip
 * --drop` into a fresh one (the `admin`, `config` and `local` databases excluded: the users are
 * Berth's, made from the service's own credentials), and a count of the documents it then holds.
 *
 * The tools take a password only from their arguments, a prompt, or a YAML file named by `--config`
 * (MongoDB Database Tools 100.3.0 and later: the documented way). Arguments are visible to every user
 * of the host (`ps`, /proc/<pid>/cmdline: a container's processes are the host's), so the password goes
 * in such a file: mode 0600, owned by the service's uid (the owner of the folder it is written to),
 * in the folder the container sees as `/app`, removed once the program exited. Argument arrays only.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Credentials } from './credentials.js';

/** Where a service's configuration folder is inside its container (service-containers.ts). */
const APP = '/app';

/** The databases a restore leaves out: users and roles come from the service's credentials, the rest is the server's own. */
export const EXCLUDED_DATABASES = ['admin', 'config', 'local'] as const;

/** The `--config` file's text: the password only (a JSON string is a YAML double-quoted scalar). */
export function toolsConfigText(c: Pick<Credentials, 'password'>): string {
  return `password: ${JSON.stringify(c.password)}\n`;
}

/** How the tools reach the instance from inside its container: its loopback, the service's user (authenticated on `admin`). */
function connection(configPath: string, port: number, username: string): string[] {
  return [`--config=${configPath}`, '--host=127.0.0.1', `--port=${port}`, `--username=${username}`, '--authenticationDatabase=admin'];
}

/** `mongodump`'s arguments: every database, as one gzip-compressed archive on its standard output. */
export function mongodumpArgs(o: { configPath: string; port: number; username: string }): string[] {
  return [...connection(o.configPath, o.port, o.username), '--archive', '--gzip'];
}

/** `mongorestore`'s arguments: the archive file (inside the box) into the fresh instance, stopping at the first error. */
export function mongorestoreArgs(o: { configPath: string; port: number; username: string; archive: string }): string[] {
  return [
    ...connection(o.configPath, o.port, o.username),
    `--archive=${o.archive}`,
    '--gzip',
    '--drop',
    '--stopOnError',
    ...EXCLUDED_DATABASES.map((db) => `--nsExclude=${db}.*`),
  ];
}

/** What `mongorestore` (100.x) says it did: `N document(s) restored successfully. M document(s) failed to restore.`; null when it did not say. */
export function restoreSummary(out: string): { restored: number; failed: number } | null {
  const m = /(\d+) document\(s\) restored successfully\. (\d+) document\(s\) failed to restore/.exec(out);
  return m ? { restored: Number(m[1]), failed: Number(m[2]) } : null;
}

/** The line `countScript` prints. */
export const COUNT_LINE = /^berth-documents=(\d+)$/m;

/**
 * A mongosh script that signs in as the service's user and prints `berth-documents=<n>`: the documents
 * of every collection outside the excluded databases (views hold none). It holds the password: it is
 * written to the throwaway instance's configuration folder, which goes when the instance closes.
 */
export function countScript(c: Pick<Credentials, 'username' | 'password'>): string {
  const js = (v: unknown) => JSON.stringify(v);
  return [
    "const admin = db.getSiblingDB('admin');",
    `admin.auth(${js(c.username)}, ${js(c.password)});`,
    `const skip = ${js(EXCLUDED_DATABASES)};`,
    'let n = 0;',
    'for (const d of admin.adminCommand({ listDatabases: 1, nameOnly: true }).databases) {',
    '  if (skip.includes(d.name)) continue;',
    '  const s = db.getSiblingDB(d.name);',
    "  for (const c of s.getCollectionInfos({ type: 'collection' })) {",
    "    if (c.name === 'system.views' || c.name === 'system.profile') continue;",
    '    n += s.getCollection(c.name).countDocuments({});',
    '  }',
    '}',
    "print('berth-documents=' + n);",
    '',
  ].join('\n');
}

/**
 * Writes a `--config` file for one run into `dir` (the folder the container sees as `/app`): a new
 * file (never an existing one or a link), mode 0600, given to the folder's owner (the service's uid)
 * when the server runs as someone else. Answers its path inside the container and how to remove it.
 */
export async function writeToolsConfig(dir: string, c: Pick<Credentials, 'password'>): Promise<{ inside: string; hostPath: string; remove(): Promise<void> }> {
  const name = `berth-mongo-tools-${randomBytes(8).toString('hex')}.yaml`;
  const hostPath = path.join(dir, name);
  const owner = await stat(dir);
  const fh = await open(hostPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(toolsConfigText(c));
    if (process.getuid?.() === 0 && (owner.uid !== 0 || owner.gid !== 0)) await fh.chown(owner.uid, owner.gid);
  } catch (e) {
    await fh.close();
    await rm(hostPath, { force: true });
    throw e;
  }
  await fh.close();
  return { inside: `${APP}/${name}`, hostPath, remove: () => rm(hostPath, { force: true }) };
}
