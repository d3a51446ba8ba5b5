/**
 * Which files of a folder go into a deployment: the one set of rules `berth deploy` (src/cli/pack.ts,
 * walking the disk) and the dashboard's folder upload (web/src/pages/projects/new-pack.ts, reading a
 * picked folder's file list) both apply. Pure: no `node:` imports, the dashboard bundles it.
 *
 * - `.git`, `.hg`, `.svn` and `node_modules` (folders, at any depth), `.DS_Store` (files) and the
 *   root's `.berth` (the CLI's folder link) are always left out, whatever the ignore files say;
 * - every `.gitignore` applies to its folder and below, a deeper one overriding its parents (as in
 *   git), and a root `.berthignore` applies last; rules are read by the `ignore` package,
 *   case-sensitively like git on Linux (core.ignorecase false);
 * - `.env.local` and `.env.*.local` (the local-only env files `berth env pull` writes, which hold
 *   values for this machine, often secrets; Vercel's CLI leaves out the same names) are left out
 *   unless an ignore file brings them back (`!.env.local`).
 */
import ignore, { type Ignore } from 'ignore';

export const ALWAYS_DIRS: ReadonlySet<string> = new Set(['.git', '.hg', '.svn', 'node_modules']);
export const ALWAYS_FILES: ReadonlySet<string> = new Set(['.DS_Store']);
/** Folders left out only at the root. */
export const ROOT_ONLY_DIRS: ReadonlySet<string> = new Set(['.berth']);
export const DEFAULT_RULES: readonly string[] = ['.env.local', '.env.*.local'];
export const GITIGNORE = '.gitignore';
export const BERTHIGNORE = '.berthignore';

/** Is the entry `name` (a folder when `isDir`; at the root when `atRoot`) left out whatever the ignore files say? */
export function alwaysLeftOut(name: string, isDir: boolean, atRoot: boolean): boolean {
  return isDir ? ALWAYS_DIRS.has(name) || (atRoot && ROOT_ONLY_DIRS.has(name)) : ALWAYS_FILES.has(name);
}

/** The rules of one ignore file, bound to the folder holding it (relative to the root, '' for the root). */
interface Scope {
  base: string;
  ig: Ignore;
}

const rules = (text: string | readonly string[]): Ignore => ignore({ ignorecase: false }).add(text as string | string[]);
const parentOf = (rel: string): string => {
  const slash = rel.lastIndexOf('/');
  return slash < 0 ? '' : rel.slice(0, slash);
};

/**
 * The ignore files of one folder and what they leave out. Paths are relative to the root, with `/`
 * and no trailing slash. Feed it the root's `.berthignore` and each folder's `.gitignore` (a walk
 * adds a folder's before asking about its entries), then ask.
 */
export class PackRules {
  private readonly gitignores = new Map<string, Ignore>();
  private readonly defaults = rules(DEFAULT_RULES);
  private berth: Ignore | null = null;
  private readonly scopeCache = new Map<string, Scope[]>();
  private readonly dirCache = new Map<string, boolean>();

  /** The text of the root's `.berthignore`. */
  setBerthignore(text: string): void {
    this.berth = rules(text);
    this.forget();
  }

  /** The text of the `.gitignore` in folder `dir` ('' for the root). */
  addGitignore(dir: string, text: string): void {
    this.gitignores.set(dir, rules(text));
    this.forget();
  }

  /** The path of a `.gitignore` or the root's `.berthignore` read through the methods above, or null for any other file. */
  static ignoreFileOf(rel: string): { kind: 'git'; dir: string } | { kind: 'berth' } | null {
    if (rel === BERTHIGNORE) return { kind: 'berth' };
    if (rel === GITIGNORE || rel.endsWith(`/${GITIGNORE}`)) return { kind: 'git', dir: parentOf(rel) };
    return null;
  }

  /**
   * Is `rel` left out by the ignore files, given the folders above it are kept? The scopes go from
   * the defaults and the root's .gitignore to the deepest, then `.berthignore`: the last one with a
   * matching rule decides.
   */
  ignored(rel: string, isDir: boolean): boolean {
    let out = false;
    for (const s of this.scopesFor(parentOf(rel))) {
      const sub = s.base ? (rel.startsWith(`${s.base}/`) ? rel.slice(s.base.length + 1) : null) : rel;
      if (sub === null) continue;
      // Only folders the scopes as a whole keep are entered: when this scope ignores the parent (a
      // later scope re-included it), the `ignore` package would answer that for everything inside,
      // so this scope has no say there.
      const slash = sub.lastIndexOf('/');
      if (slash > 0 && s.ig.test(sub.slice(0, slash + 1)).ignored) continue;
      const r = s.ig.test(isDir ? `${sub}/` : sub);
      if (r.ignored) out = true;
      else if (r.unignored) out = false;
    }
    return out;
  }

  /** Is folder `dir` left out by the ignore files, itself or through a folder above it (a walk would never enter it)? */
  dirIgnored(dir: string): boolean {
    if (dir === '') return false;
    const known = this.dirCache.get(dir);
    if (known !== undefined) return known;
    const out = this.dirIgnored(parentOf(dir)) || this.ignored(dir, true);
    this.dirCache.set(dir, out);
    return out;
  }

  /** The scopes in effect inside folder `dir`: the defaults, each .gitignore from the root down to `dir`, then .berthignore. */
  private scopesFor(dir: string): Scope[] {
    const cached = this.scopeCache.get(dir);
    if (cached) return cached;
    const parts = dir ? dir.split('/') : [];
    const scopes: Scope[] = [{ base: '', ig: this.defaults }];
    for (let i = 0; i <= parts.length; i++) {
      const base = parts.slice(0, i).join('/');
      const ig = this.gitignores.get(base);
      if (ig) scopes.push({ base, ig });
    }
    if (this.berth) scopes.push({ base: '', ig: this.berth });
    this.scopeCache.set(dir, scopes);
    return scopes;
  }

  private forget(): void {
    this.scopeCache.clear();
    this.dirCache.clear();
  }
}
