import { chmodSync, cpSync, existsSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { copyTreeWithinRoots, inside } from '../lib/copy-tree.js';
import { BuildError } from './build-error.js';

export type BuildSource =
  | { type: 'local'; path: string; roots: string[] }
  | { type: 'upload'; dir: string }
  | { type: 'git'; url: string; ref: string | null; username?: string | null; token?: string | null };

const SKIP_COPY = new Set(['.git', 'node_modules']);

export interface SourceContext {
  /** The build's working directory (the askpass helper is written there). */
  workDir: string;
  /** Where the source goes (exists, empty). */
  srcDir: string;
  signal: AbortSignal;
  /** A `[berth]` line in the build log. */
  note(line: string): void;
  /** Runs one of Berth's own tools (git) on the host; resolves with its output (its first 4 KiB of lines). */
  runHost(argv: string[], cwd: string, extraEnv: Record<string, string>, label: string): Promise<string>;
}

/**
 * Puts the build's source into `srcDir`: a copy of the upload, a copy of the local folder (which must
 * be inside one of its roots), or a git fetch at a ref with the credential passed through GIT_ASKPASS,
 * never in a URL. Returns the commit for git, else null.
 */
export async function fetchSource(src: BuildSource, ctx: SourceContext): Promise<string | null> {
  const srcDir = ctx.srcDir;
  let commit: string | null = null;
  if (src.type === 'upload') {
    if (!existsSync(src.dir)) throw new BuildError('the uploaded source is gone; upload the folder again');
    ctx.note('copying the uploaded source');
    cpSync(src.dir, srcDir, { recursive: true, verbatimSymlinks: true });
  } else if (src.type === 'local') {
    let real: string;
    try {
      real = realpathSync(src.path);
    } catch {
      throw new BuildError(`the project's local folder ${src.path} does not exist`);
    }
    const roots = src.roots.map((r) => {
      try {
        return realpathSync(r);
      } catch {
        return path.resolve(r);
      }
    });
    if (!roots.some((r) => inside(real, r))) throw new BuildError(`the project's local folder ${src.path} is outside BERTH_LOCAL_ROOTS`);
    ctx.note(`copying ${src.path}`);
    copyTreeWithinRoots(real, srcDir, { roots, skipNames: SKIP_COPY, onSkip: (rel, why) => ctx.note(`not copied: ${rel}: ${why}`) });
  } else {
    const gitEnv: Record<string, string> = { GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' };
    if (src.token) {
      // The credential reaches git through an askpass helper that reads it from the environment of
      // this one process; it is never in a URL, an argument or a file.
      const askpass = path.join(ctx.workDir, 'askpass.sh');
      writeFileSync(askpass, '#!/bin/sh\ncase "$1" in\n  Username*) printf "%s\\n" "$BERTH_GIT_USERNAME" ;;\n  *) printf "%s\\n" "$BERTH_GIT_PASSWORD" ;;\nesac\n', { mode: 0o700 });
      chmodSync(askpass, 0o700);
      gitEnv.GIT_ASKPASS = askpass;
      gitEnv.BERTH_GIT_USERNAME = src.username || 'x-access-token';
      gitEnv.BERTH_GIT_PASSWORD = src.token;
    }
    let shown = src.url;
    try {
      const u = new URL(src.url);
      u.username = '';
      u.password = '';
      shown = u.toString();
    } catch {
      /* a path */
    }
    ctx.note(`fetching ${shown}${src.ref ? ` at ${src.ref}` : ''}`);
    await ctx.runHost(['git', 'init', '-q', srcDir], ctx.workDir, gitEnv, 'git init');
    await ctx.runHost(['git', '-C', srcDir, 'remote', 'add', 'origin', src.url], ctx.workDir, gitEnv, 'git remote');
    const ref = src.ref || 'HEAD';
    // A ref is passed to git as an argument: one that looks like an option, or names a refspec, is refused.
    if (ref.startsWith('-') || /[\s:~^?*[\\]|\.\.|@\{/.test(ref) || ref.length > 255) throw new BuildError(`the ref "${ref.slice(0, 80)}" is not a valid branch, tag or commit`);
    try {
      await ctx.runHost(['git', '-C', srcDir, 'fetch', '-q', '--depth', '1', 'origin', ref], ctx.workDir, gitEnv, 'git fetch');
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      ctx.note('shallow fetch failed; fetching the full history');
      await ctx.runHost(['git', '-C', srcDir, 'fetch', '-q', 'origin'], ctx.workDir, gitEnv, 'git fetch');
      await ctx.runHost(['git', '-C', srcDir, 'checkout', '-q', ref], ctx.workDir, gitEnv, 'git checkout');
    }
    try {
      await ctx.runHost(['git', '-C', srcDir, 'checkout', '-q', 'FETCH_HEAD'], ctx.workDir, gitEnv, 'git checkout');
    } catch {
      /* already checked out by the fallback */
    }
    commit = (await ctx.runHost(['git', '-C', srcDir, 'rev-parse', 'HEAD'], ctx.workDir, gitEnv, 'git rev-parse')).trim() || null;
    rmSync(path.join(ctx.workDir, 'askpass.sh'), { force: true });
  }
  return commit;
}
