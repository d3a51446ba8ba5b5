import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * Reused outputs (issue 39): when the source tree and the plan of a build are the same as those of the
 * environment's last ready build, that build's output is the release again, whole: no install, no build
 * step, no box. The output is the release folder (sandbox and process runtimes: hard links to the last
 * release's files, which no app can write: a release is read-only at `/app`), the published static site
 * (the same), or the release image (docker: the last image tagged again).
 *
 * The key (`outputKey`) is the sha256 of the source tree (every path, type, permission bits, file
 * contents and link targets; a git source's `.git` is left out and its commit counts instead) and of
 * everything the plan and the build read: the commands, the runtime and its version, the tools, the
 * plan's and the environment's variables (hashed, never kept), the root and output folders, the
 * Dockerfile, the port. `<data-dir>/build-cache/<project>/.outputs/<environment>.json` (outside every
 * box) names the last ready build's key and output; the build job writes it once a deployment is ready.
 */

/** A source larger than this is not hashed (its output is not reused): the hash would cost more than it saves. */
const TREE_MAX_FILES = 50_000;
const TREE_MAX_BYTES = 512 * 1024 * 1024;

export interface KeptOutput {
  key: string;
  deploymentId: string;
  /** `folder`: a server release's source folder; `static`: a published static site; `image`: a release image. */
  kind: 'folder' | 'static' | 'image';
  dir?: string;
  image?: string;
}

/**
 * The hash of a source tree, or null when it holds something other than files, folders and links, or
 * more than the caps. Nothing is followed: links count by their target's text. Called before any
 * process of the project's runs on the tree.
 */
export async function sourceTreeHash(root: string, skipTop: string[] = []): Promise<string | null> {
  const hash = createHash('sha256');
  let files = 0;
  let bytes = 0;
  const walk = async (dir: string, rel: string): Promise<boolean> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      if (!rel && skipTop.includes(name)) continue;
      const p = path.join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(p);
      if (++files > TREE_MAX_FILES) return false;
      if (st.isDirectory()) {
        hash.update(`d\0${r}\0${st.mode & 0o7777}\0`);
        if (!(await walk(p, r))) return false;
      } else if (st.isSymbolicLink()) {
        hash.update(`l\0${r}\0${await readlink(p)}\0`);
      } else if (st.isFile()) {
        bytes += st.size;
        if (bytes > TREE_MAX_BYTES) return false;
        const data = await readFile(p);
        hash.update(`f\0${r}\0${st.mode & 0o7777}\0${data.length}\0`);
        hash.update(data);
      } else {
        return false;
      }
    }
    return true;
  };
  return (await walk(root, '')) ? hash.digest('hex') : null;
}

/** The key of a build's output: the tree's hash and what the plan and the build read (`plan`: any JSON). */
export function outputKey(tree: string, plan: unknown): string {
  return createHash('sha256').update(JSON.stringify({ v: 1, tree, plan })).digest('hex');
}

/** The variables a build sees, as one hash (their values are never written anywhere). */
export function variablesHash(env: Record<string, string>): string {
  const h = createHash('sha256');
  for (const k of Object.keys(env).sort()) h.update(`${k}\0${env[k]}\0`);
  return h.digest('hex');
}

function recordOf(cacheDir: string, environment = path.basename(cacheDir)): string {
  return path.join(path.dirname(cacheDir), '.outputs', `${environment}.json`);
}

/** The environment's last ready build's output when its key is `key` and it is still there; null otherwise. */
export async function findKeptOutput(cacheDir: string, key: string): Promise<KeptOutput | null> {
  let kept: KeptOutput;
  try {
    kept = JSON.parse(await readFile(recordOf(cacheDir), 'utf8')) as KeptOutput;
  } catch {
    return null;
  }
  if (!kept || kept.key !== key) return null;
  if (kept.kind === 'image') return typeof kept.image === 'string' && kept.image ? kept : null;
  return typeof kept.dir === 'string' && lstatSync(kept.dir, { throwIfNoEntry: false })?.isDirectory() ? kept : null;
}

/** After a deployment is ready: its output named as the environment's last (replacing the one before). */
export async function rememberOutput(cacheDir: string, output: KeptOutput): Promise<void> {
  const file = recordOf(cacheDir);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify(output), { mode: 0o600 });
  await rename(tmp, file);
}

const execFileP = promisify(execFile);

/**
 * `to` (which must not exist) becomes a tree of hard links to `from`'s files (folders made anew with the
 * same owner and permissions, links copied as links), or a plain copy when they are on different
 * filesystems. Only for trees nothing writes into afterwards (releases, published sites).
 */
export async function linkTree(from: string, to: string): Promise<'linked' | 'copied'> {
  if (existsSync(to)) throw new Error(`${to} exists`);
  await mkdir(path.dirname(to), { recursive: true });
  try {
    await execFileP('cp', ['-a', '--link', '--', from, to], { maxBuffer: 1024 * 1024 });
    return 'linked';
  } catch {
    await rm(to, { recursive: true, force: true });
    await execFileP('cp', ['-a', '--', from, to], { maxBuffer: 1024 * 1024 });
    return 'copied';
  }
}

/** A build's output key and, when the environment's last ready build had the same, that build's output. */
export async function keptOutputFor(cacheDir: string | null | undefined, tree: string | null, plan: unknown): Promise<{ key: string; kept: KeptOutput | null } | null> {
  if (!cacheDir || !tree) return null;
  const key = outputKey(tree, plan);
  return { key, kept: await findKeptOutput(cacheDir, key).catch(() => null) };
}

/**
 * Makes the kept output this build's: the release folder linked into `srcDir` (which is replaced), or the
 * image tagged `imageTag`; a static site's is linked when it is published. False (said in the log) when it
 * cannot be: the build then runs as usual.
 */
export async function applyKeptOutput(kept: KeptOutput, to: { srcDir: string; imageTag?: string; tag?: (from: string, to: string) => Promise<void> }, note: (line: string) => void): Promise<boolean> {
  try {
    if (kept.kind === 'image') {
      if (!to.tag || !to.imageTag) return false;
      await to.tag(kept.image!, to.imageTag);
    } else if (kept.kind === 'folder') {
      // Beside the source first: a failed link leaves the source whole to build from.
      const staged = path.join(path.dirname(to.srcDir), '.src-reused');
      await rm(staged, { recursive: true, force: true });
      try {
        await linkTree(kept.dir!, staged);
      } catch (e) {
        await rm(staged, { recursive: true, force: true });
        throw e;
      }
      await rm(to.srcDir, { recursive: true, force: true });
      await rename(staged, to.srcDir);
    }
  } catch (e) {
    note(`build: the last build's output could not be reused (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): building`);
    return false;
  }
  note(`build: reused the output of the last ready build (${kept.deploymentId}): source and plan unchanged, install and build skipped`);
  return true;
}
