import { BuildError } from './build-error.js';
import { matchNodeVersion, missingProgram, offeredNodeVersions } from './toolchains.js';
import type { PlanInput } from './build.js';

/** What a build's host and start command must offer, checked before anything of the build runs. */

/** `BERTH_IMAGE_<RUNTIME>`: the setting that names a runtime's base image. */
export function baseImageVariable(runtime: string): string {
  return `BERTH_IMAGE_${runtime.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** A start command that pins a port other than the app's $PORT fails the build before anything runs. */
export function checkStart(start: string | null, port: number): void {
  if (!start) return;
  const fixed = fixedPort(start);
  if (fixed !== null && fixed !== port) {
    throw new BuildError(`the start command listens on port ${fixed}, but the app must listen on $PORT (${port}): write $PORT instead of ${fixed} in the start command, or set the project's port to ${fixed}`);
  }
}

/**
 * What the host must offer before anything of the build runs: the programs of the plan (on the PATH
 * the box sees), the project's nodeVersion, and a start command that listens on $PORT.
 */
export function checkHost(plan: PlanInput, host: { hostPath: string; nodeVersion: string | null; start: string | null; port: number }, note: (line: string) => void): void {
  const programs = [...plan.programs];
  if (plan.tools?.some((t) => t.name === 'pnpm' || t.name === 'yarn')) programs.push('corepack');
  if (plan.tools?.some((t) => t.name === 'bun' || t.name === 'deno')) programs.push('npm');
  const missing = missingProgram(plan.runtime, programs, host.hostPath);
  if (missing) throw new BuildError(missing);
  if (plan.runtime === 'node' || plan.runtime === 'bun') {
    const wanted = host.nodeVersion ? { value: host.nodeVersion, source: 'the project\'s nodeVersion' } : plan.version;
    if (wanted && !matchNodeVersion(wanted.value)) {
      const offered = offeredNodeVersions().join(', ');
      if (host.nodeVersion) throw new BuildError(`nodeVersion ${host.nodeVersion} is not offered by this host (it offers Node.js ${offered}): change nodeVersion, or clear it`);
      note(`${wanted.source} asks for Node.js ${wanted.value}; this host offers ${offered}, which the build and the app use`);
    }
  }
  checkStart(host.start, host.port);
}

/** A literal port a start command pins (`--port 4200`, `-p 4200`, `PORT=4200`, `:4200`), or null when it uses $PORT. */
export function fixedPort(command: string): number | null {
  const m = /(?:--port[= ]|(?:^|\s)-p\s+|(?:^|\s)PORT=|--bind[= ]\S*:|(?:^|\s)-b\s+\S*:)(\d{2,5})\b/.exec(command);
  return m ? Number(m[1]) : null;
}
