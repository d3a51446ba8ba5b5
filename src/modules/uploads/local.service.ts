/**
 * Local-folder routes: scan and import a folder inside BERTH_LOCAL_ROOTS (after resolving every
 * symlink), and list the projects whose source is a local folder. Self-hosted only (the routes say so).
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { conflict, invalid } from '../../lib/errors.js';
import { scanProject, type ScanResult } from '../detect/index.js';
import { createProject, listProjects, loadRecord, projectImporting, type ProjectRecord } from '../projects/index.js';

type ScanAnswer = ScanResult;

/**
 * Resolves `input` (absolute, or relative to the first local root) to a real directory inside one of
 * BERTH_LOCAL_ROOTS, after resolving every symlink. Anything else is a 400 naming `path`.
 */
export function resolveLocalPath(ctx: Pick<AppContext, 'config'>, input: string): string {
  if (input.includes('\0')) throw invalid('path', 'path must not contain NUL bytes');
  const roots = ctx.config.localRoots
    .map((r) => {
      try {
        return realpathSync(r);
      } catch {
        return null;
      }
    })
    .filter((r): r is string => !!r);
  const first = ctx.config.localRoots[0] ?? '/';
  const abs = path.isAbsolute(input) ? input : path.resolve(first, input);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    throw invalid('path', `path ${JSON.stringify(input)} does not exist`);
  }
  const inside = roots.some((r) => real === r || real.startsWith(r.endsWith(path.sep) ? r : r + path.sep));
  if (!inside) {
    throw invalid('path', `path ${JSON.stringify(input)} is outside the folders this server may read (BERTH_LOCAL_ROOTS: ${ctx.config.localRoots.join(':')})`);
  }
  let isDir = false;
  try {
    isDir = statSync(real).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw invalid('path', `path ${JSON.stringify(input)} is not a folder`);
  return real;
}

export function scanLocal(ctx: Pick<AppContext, 'config'>, input: { path: string }): ScanAnswer & { path: string } {
  const real = resolveLocalPath(ctx, input.path);
  return { path: real, ...scanProject(real) };
}

export async function importLocal(ctx: AppContext, actor: Actor, input: { path: string; name?: string }): Promise<ProjectRecord> {
  const real = resolveLocalPath(ctx, input.path);
  const dupe = await projectImporting(ctx, actor.orgId, real);
  if (dupe) throw conflict(`a project of this organization already imports ${real} (${dupe})`, 'path');
  const scan = scanProject(real);
  const name = input.name?.trim() || path.basename(real) || 'project';
  const project = await createProject(ctx, actor, {
    name,
    localPath: real,
    framework: scan.framework,
    installCommand: scan.installCommand,
    buildCommand: scan.buildCommand,
    startCommand: scan.startCommand,
    outputDirectory: scan.outputDirectory,
    rootDirectory: scan.rootDirectory || null,
    packageManager: scan.packageManager,
    runtime: scan.runtime,
    ...(scan.port ? { port: scan.port } : {}),
  });
  return project.source.type === 'local' ? project : loadRecord(ctx, ctx.db, actor.orgId, project.id);
}

/** Projects of the org whose source is a local folder, that the actor can read. */
export async function listLocal(ctx: AppContext, actor: Actor): Promise<ProjectRecord[]> {
  return (await listProjects(ctx, actor)).filter((p) => p.source.type === 'local');
}
