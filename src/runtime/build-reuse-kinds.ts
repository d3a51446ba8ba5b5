import { lstatSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import { sourceTreeHash } from './build-output.js';

/**
 * What a runtime's install leaves in the app folder, for reused installs (build-reuse.ts): the folders a
 * build keeps and a later one gets back, and what besides the lockfile decides them. Node.js's (package.json
 * fields, workspaces) is build-reuse.ts's own; the others are here:
 *
 * - python: `.venv` (pip from requirements.txt, uv, poetry, pdm, pipenv: detection puts every one there).
 *   A virtual environment names the path it was made at (its scripts' `#!` lines), so it is reused only
 *   where the box shows the app folder at the same path every build (sandbox, docker: `/app`).
 * - ruby: `vendor/bundle` and `.bundle` (its config names the path) from Gemfile.lock.
 * - php: `vendor` from composer.lock; a reused install still runs `composer dump-autoload` (the
 *   autoloader maps the app's own classes, and Laravel's package discovery runs after it).
 *
 * Local packages the lockfile names by path (a requirements.txt's `./pkg`, a Gemfile.lock's `PATH`
 * remote, composer.lock's `path` dist) count by their content: a change to them installs again.
 */
export interface InstallKind {
  /** The lockfiles, in the order looked for: the first present decides; none: not reused. */
  lockfiles: string[];
  /** Files beside it the install reads, hashed when present. */
  manifests: string[];
  /** The app folder's folders the install fills (relative, posix). */
  folders: string[];
  /** Reused only where the app folder's path in the box is the same each build. */
  fixedPath?: boolean;
  /** The local packages the lockfile names, relative to the app folder (null: one that cannot be hashed). */
  localPaths?(lockName: string, lock: string): string[] | null;
  /** What runs instead of the install after a reuse (null: nothing). */
  afterReuse?(install: string): string | null;
}

/** A local package file (a wheel) larger than this is not hashed: the install is not reused. */
const LOCAL_FILE_MAX = 256 * 1024 * 1024;

const PYTHON_LOCKS = ['requirements.txt', 'uv.lock', 'poetry.lock', 'pdm.lock', 'Pipfile.lock'];

export const INSTALL_KINDS: Record<string, InstallKind> = {
  python: {
    lockfiles: PYTHON_LOCKS,
    manifests: ['pyproject.toml', 'Pipfile'],
    folders: ['.venv'],
    fixedPath: true,
    localPaths: (name, text) => (name === 'requirements.txt' ? requirementPaths(text) : []),
  },
  ruby: {
    lockfiles: ['Gemfile.lock'],
    manifests: ['Gemfile'],
    folders: ['vendor/bundle', '.bundle'],
    localPaths: (_n, text) => [...text.matchAll(/^PATH\r?\n\s+remote:\s*(.+?)\s*$/gm)].map((m) => m[1]!),
  },
  php: {
    lockfiles: ['composer.lock'],
    manifests: ['composer.json'],
    folders: ['vendor'],
    localPaths: composerPaths,
    afterReuse: (install) => {
      if (!/\bcomposer\s+install\b/.test(install)) return null;
      const flags = ['--no-interaction'];
      if (/\s--no-dev\b/.test(install)) flags.push('--no-dev');
      if (/\s(--optimize-autoloader|-o)\b/.test(install)) flags.push('--optimize');
      if (/\s(--classmap-authoritative|-a)\b/.test(install)) flags.push('--classmap-authoritative');
      return `composer dump-autoload ${flags.join(' ')}`;
    },
  },
};

/**
 * The local paths a requirements.txt installs from (`./pkg`, `-e ../lib`, `name @ file:./pkg`, a wheel
 * file) and the files it includes (`-r`, `-c`); null for one it cannot follow (an absolute path, a URL
 * of a local file outside the source).
 */
export function requirementPaths(text: string): string[] | null {
  const out: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (!line) continue;
    const opt = /^(?:-r|--requirement|-c|--constraint|-e|--editable|-f|--find-links)\s*=?\s*(\S+)/.exec(line);
    const ref = opt?.[1] ?? /@\s*(file:\S+)/.exec(line)?.[1] ?? line.split(/[\s;]/)[0]!;
    const local = ref.startsWith('file:') ? ref.replace(/^file:(\/\/)?/, '') : ref;
    if (ref.startsWith('file:') || opt || /^\.{1,2}(\/|$)/.test(local) || /^\//.test(local) || /\.(whl|tar\.gz|zip)$/.test(local) || (local.includes('/') && !/[@=<>~!]/.test(local))) {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(ref) && !ref.startsWith('file:')) continue;
      if (path.isAbsolute(local)) return null;
      out.push(local);
    }
  }
  return out;
}

function composerPaths(_name: string, text: string): string[] | null {
  try {
    const lock = JSON.parse(text) as { packages?: unknown[]; 'packages-dev'?: unknown[] };
    const all = [...(Array.isArray(lock.packages) ? lock.packages : []), ...(Array.isArray(lock['packages-dev']) ? lock['packages-dev'] : [])];
    const out: string[] = [];
    for (const p of all) {
      const dist = (p as { dist?: { type?: unknown; url?: unknown } } | null)?.dist;
      if (dist?.type === 'path' && typeof dist.url === 'string') {
        if (path.isAbsolute(dist.url)) return null;
        out.push(dist.url);
      }
    }
    return out;
  } catch {
    return null;
  }
}

/**
 * The hash of the local packages (`rels`, relative to the app folder): null when one lies outside the
 * source, is reached through a link, or is too large to hash. A file named by `-r`/`-c` is hashed as
 * the file; its own local paths are followed (a few levels).
 */
export async function localPathsHash(srcDir: string, appDir: string, rels: string[], depth = 0): Promise<string | null> {
  const h = createHash('sha256');
  const root = realpathSync(srcDir);
  for (const rel of [...new Set(rels)].sort()) {
    const abs = path.resolve(appDir, rel);
    const inSrc = path.relative(srcDir, abs);
    if (inSrc.startsWith('..') || path.isAbsolute(inSrc)) return null;
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (!st) {
      h.update(`missing\0${rel}\0`);
      continue;
    }
    let real: string;
    try {
      real = realpathSync(abs);
    } catch {
      return null;
    }
    if (real !== path.join(root, inSrc)) return null;
    if (st.isDirectory()) {
      const tree = await sourceTreeHash(abs);
      if (!tree) return null;
      h.update(`d\0${rel}\0${tree}\0`);
    } else if (st.isFile() && st.size <= LOCAL_FILE_MAX) {
      // A regular file inside the source, not a link (checked above; nothing of the project's runs yet).
      const data = await readFile(abs);
      h.update(`f\0${rel}\0${data.length}\0`).update(data);
      // A requirements file it includes may name local paths of its own.
      if (/\.(txt|in)$/.test(rel) && depth < 4) {
        const more = requirementPaths(data.toString('utf8'));
        if (!more) return null;
        const sub = await localPathsHash(srcDir, path.dirname(abs), more, depth + 1);
        if (!sub) return null;
        h.update(sub);
      }
    } else return null;
  }
  return h.digest('hex');
}
