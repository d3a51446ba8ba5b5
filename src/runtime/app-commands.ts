import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseCommand, type CommandStep } from './command.js';
import { toolchainPath } from './toolchains.js';

/** `npm start`, `pnpm run start`, `yarn start`, `bun run start`: a package manager running the start script. */
const RUN_START = /^(?:npm|pnpm|yarn|bun)(?: run)? start$/;

/**
 * The argument arrays a start command runs as. A package manager's `start` whose script needs no
 * shell is run directly (one process less, a faster start and wake, and no package manager needed
 * at run time); otherwise the command itself is parsed.
 */
export function startSteps(appDir: string, command: string, env: Record<string, string>): CommandStep[] {
  const trimmed = command.trim();
  if (RUN_START.test(trimmed)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
      const script = pkg.scripts?.start;
      if (script && !/^(?:npm|pnpm|yarn|bun)\b/.test(script.trim())) return parseCommand(script, env);
    } catch {
      /* fall through to the package manager itself */
    }
  }
  return parseCommand(trimmed, env);
}

/**
 * PATH for the app folder's commands: its Python virtual environment (`.venv/bin`, made by the
 * plan's install step) and its own `node_modules/.bin`, then those of each folder above it up to the
 * source root (a workspace's hoisted binaries), then the toolchains the build installed, then the
 * base PATH.
 */
export function pathWithBin(appDir: string, basePath: string | undefined, root?: string): string {
  const dirs = [path.join(appDir, '.venv', 'bin'), path.join(appDir, 'node_modules', '.bin')];
  if (root) {
    let dir = appDir;
    while (dir !== root && dir.startsWith(root + path.sep)) {
      dir = path.dirname(dir);
      dirs.push(path.join(dir, 'node_modules', '.bin'));
    }
    dirs.push(...toolchainPath(root));
  }
  return [...dirs, basePath ?? '/usr/local/bin:/usr/bin:/bin'].join(path.delimiter);
}
