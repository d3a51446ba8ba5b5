import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BuildError } from './build-error.js';
import { parseCommand, type CommandStep } from './command.js';

/** What a folder needs, when the project does not say: npm install/build/start from package.json. */
export function detectCommands(dir: string): { installCommand: string | null; buildCommand: string | null; startCommand: string | null } {
  const pkgFile = path.join(dir, 'package.json');
  if (!existsSync(pkgFile)) {
    if (existsSync(path.join(dir, 'server.js'))) return { installCommand: null, buildCommand: null, startCommand: 'node server.js' };
    if (existsSync(path.join(dir, 'index.js'))) return { installCommand: null, buildCommand: null, startCommand: 'node index.js' };
    return { installCommand: null, buildCommand: null, startCommand: null };
  }
  let pkg: { dependencies?: object; devDependencies?: object; scripts?: Record<string, string>; main?: string };
  try {
    pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
  } catch {
    throw new BuildError('package.json is not valid JSON');
  }
  const hasDeps = Object.keys(pkg.dependencies ?? {}).length + Object.keys(pkg.devDependencies ?? {}).length > 0;
  let installCommand: string | null = null;
  if (hasDeps) {
    if (existsSync(path.join(dir, 'pnpm-lock.yaml'))) installCommand = 'pnpm install --frozen-lockfile';
    else if (existsSync(path.join(dir, 'yarn.lock'))) installCommand = 'yarn install --frozen-lockfile';
    else if (existsSync(path.join(dir, 'package-lock.json'))) installCommand = 'npm ci';
    else installCommand = 'npm install';
  }
  const buildCommand = pkg.scripts?.build ? 'npm run build' : null;
  let startCommand: string | null = null;
  if (pkg.scripts?.start) startCommand = 'npm start';
  else if (pkg.main && existsSync(path.join(dir, pkg.main))) startCommand = `node ${pkg.main}`;
  else if (existsSync(path.join(dir, 'server.js'))) startCommand = 'node server.js';
  else if (existsSync(path.join(dir, 'index.js'))) startCommand = 'node index.js';
  return { installCommand, buildCommand, startCommand };
}

/**
 * The argument arrays a start command runs as. `npm start` whose script needs no shell is run
 * directly (one process less, faster start and wake); otherwise the command itself is parsed.
 */
export function startSteps(appDir: string, command: string, env: Record<string, string>): CommandStep[] {
  const trimmed = command.trim();
  if (trimmed === 'npm start' || trimmed === 'npm run start') {
    try {
      const pkg = JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
      const script = pkg.scripts?.start;
      if (script && !/^npm\b/.test(script.trim())) return parseCommand(script, env);
    } catch {
      /* fall through to npm itself */
    }
  }
  return parseCommand(trimmed, env);
}

/** PATH with the app's own `node_modules/.bin` first (package scripts expect it). */
export function pathWithBin(appDir: string, basePath: string | undefined): string {
  return [path.join(appDir, 'node_modules', '.bin'), basePath ?? '/usr/local/bin:/usr/bin:/bin'].join(path.delimiter);
}
