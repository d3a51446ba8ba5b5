import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { answer, type Answered, type ApiClient } from './client.js';
import { UsageError } from './output.js';

/**
 * The folder link (contract section 12): `DIR/.berth/project.json` `{ projectId, orgId, server }`,
 * written by `berth deploy`, so the next deploy from the folder updates the same project and
 * commands that take an optional PROJECT default to it.
 */
export interface FolderLink {
  projectId: string;
  orgId: string;
  server: string;
}

/** Whether two server URLs name the same server (a trailing slash aside). */
export const sameServer = (a: string, b: string): boolean => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

export function linkFile(dir: string): string {
  return path.join(path.resolve(dir), '.berth', 'project.json');
}

/** The link of `dir`, or null when there is none (or it is unreadable). */
export function readLink(dir: string): FolderLink | null {
  try {
    const v = JSON.parse(readFileSync(linkFile(dir), 'utf8')) as Partial<FolderLink>;
    if (typeof v.projectId === 'string' && typeof v.orgId === 'string' && typeof v.server === 'string') return { projectId: v.projectId, orgId: v.orgId, server: v.server };
  } catch {
    /* no link */
  }
  return null;
}

/**
 * Writes the link, and keeps it out of git: `.berth` is added to the folder's `.gitignore` when it
 * does not list it, and a folder without a `.gitignore` gets one holding `.berth`.
 */
export function writeLink(dir: string, link: FolderLink): void {
  const root = path.resolve(dir);
  mkdirSync(path.join(root, '.berth'), { recursive: true });
  writeFileSync(linkFile(root), JSON.stringify(link, null, 2) + '\n');
  const gitignore = path.join(root, '.gitignore');
  if (!existsSync(gitignore)) {
    // The link names the server and the org: not something to commit by accident.
    // berth runs with umask 077; a .gitignore is an ordinary file of the project (0644).
    writeFileSync(gitignore, '.berth\n', { flag: 'wx' });
    chmodSync(gitignore, 0o644);
    return;
  }
  const text = readFileSync(gitignore, 'utf8');
  const listed = text.split(/\r?\n/).some((l) => /^\/?\.berth\/?$/.test(l.trim()));
  if (!listed) writeFileSync(gitignore, text + (text === '' || text.endsWith('\n') ? '' : '\n') + '.berth\n');
}

/** A project as `GET /api/projects` lists it. */
export type ProjectSummary = Answered<'/api/projects', 'get'>[number];

/** Finds a project by id, slug or name among those the caller can read; null when none matches. */
export async function lookupProject(client: ApiClient, ref: string): Promise<ProjectSummary | null> {
  const list = await answer(client.api.GET('/api/projects'));
  return list.find((p) => p.id === ref) ?? list.find((p) => p.slug === ref) ?? list.find((p) => p.name === ref) ?? null;
}

/**
 * The project a command is about: `ref` (id, slug or name) when given, else the link of the current
 * folder when it points at this server. A usage error (exit 2) when neither names one.
 */
export async function resolveProject(client: ApiClient, ref: string | undefined, dir = process.cwd()): Promise<ProjectSummary> {
  if (ref) {
    const hit = await lookupProject(client, ref);
    if (!hit) throw new Error(`no project "${ref}" (by id, slug or name) that you can read`);
    return hit;
  }
  const link = readLink(dir);
  if (!link) throw new UsageError('name a project (id, slug or name), or run this in a folder linked by `berth deploy`');
  if (!sameServer(link.server, client.server)) throw new UsageError(`this folder is linked to a project on ${link.server}, not ${client.server}: name the project`);
  const hit = await lookupProject(client, link.projectId);
  if (!hit) throw new Error(`the project this folder is linked to (${link.projectId}) is gone or you cannot read it: deploy again or name a project`);
  return hit;
}
