import path from 'node:path';
import { ignoredLine, readTenantFile } from '../lib/tenant-file.js';
import { parseCommand, type CommandStep } from './command.js';
import { toolchainPath } from './toolchains.js';

/** `npm start`, `pnpm run start`, `yarn start`, `bun run start`: a package manager running the start script. */
const RUN_START = /^(?:npm|pnpm|yarn|bun)(?: run)? start$/;

/**
 * The `start` script a package manager's start command would run, read from the app folder's
 * package.json as a tenant's file (src/lib/tenant-file.ts: never through a link, never blocking on
 * a FIFO or a device, at most 1 MiB), or null when the command is no such start or the script is not
 * there. `root` is the release's source folder (the app folder or one above it): no folder between
 * it and package.json may be a link. A package.json that is there but ignored is told to `note`.
 */
export async function startScript(appDir: string, command: string, note?: (line: string) => void, root = appDir): Promise<string | null> {
  if (!RUN_START.test(command.trim())) return null;
  const rel = path.relative(root, path.join(appDir, 'package.json'));
  const file = await readTenantFile(root, rel);
  if (file.text === null) {
    if (file.problem !== 'missing') note?.(ignoredLine('package.json', file.problem));
    return null;
  }
  try {
    const script = (JSON.parse(file.text) as { scripts?: Record<string, unknown> } | null)?.scripts?.start;
    return typeof script === 'string' ? script : null;
  } catch {
    return null;
  }
}

/**
 * The argument arrays a start command runs as, given its start script (`startScript`). A package
 * manager's `start` whose script needs no shell is run directly (one process less, a faster start
 * and wake, and no package manager needed at run time); otherwise the command itself is parsed.
 */
export function stepsOf(command: string, script: string | null, env: Record<string, string>): CommandStep[] {
  const trimmed = command.trim();
  if (script && RUN_START.test(trimmed) && !/^(?:npm|pnpm|yarn|bun)\b/.test(script.trim())) {
    try {
      return parseCommand(script, env);
    } catch {
      /* fall through to the package manager itself */
    }
  }
  return parseCommand(trimmed, env);
}

/** `startScript` then `stepsOf`: the steps of a start command in the app folder as it is now. */
export async function startSteps(appDir: string, command: string, env: Record<string, string>, note?: (line: string) => void, root = appDir): Promise<CommandStep[]> {
  return stepsOf(command, await startScript(appDir, command, note, root), env);
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
