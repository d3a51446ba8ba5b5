import type { DockerEngine } from './engine.js';
import { engineMessage, statusOf } from './containers.js';

/**
 * A runtime's base image (contract 13, issue 32): the variable that names it
 * (`BERTH_IMAGE_<RUNTIME>`), and one message for every plan whose base image is missing and cannot
 * be pulled, naming that variable and the script that builds one offline (scripts/docker-base-images.sh).
 */

/** The variable that names a runtime's base image: `BERTH_IMAGE_NODE`, `BERTH_IMAGE_PYTHON`, ... */
export function baseImageVariable(runtime: string): string {
  return `BERTH_IMAGE_${runtime.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** The base image of a runtime from the environment (node defaults to node:20-bookworm-slim); null when none is set. */
export function baseImageFromEnv(runtime: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const v = env[baseImageVariable(runtime)]?.trim();
  if (v) return v;
  return runtime === 'node' ? 'node:20-bookworm-slim' : null;
}

/**
 * What to do about a runtime whose base image is missing: the same words for every plan and path
 * (build steps, the packed release image).
 */
export function baseImageFix(runtime: string): string {
  return `set ${baseImageVariable(runtime)} to an image the Docker Engine has (offline, scripts/docker-base-images.sh ${runtime} builds one from this host's toolchain; see docs/runtime.md)`;
}

/** The Error of a runtime whose base image is missing and could not be pulled. */
export function missingBaseImage(runtime: string, image: string | null, detail?: string): Error {
  if (!image) return new Error(`no base image for the ${runtime} runtime: ${baseImageFix(runtime)}`);
  return new Error(`the base image ${image} of the ${runtime} runtime is not on this machine and could not be pulled${detail ? ` (${detail})` : ''}: ${baseImageFix(runtime)}`);
}

/** The runtime's base image is on this machine, else one pull is tried; otherwise missingBaseImage(). */
export async function ensureBaseImage(engine: DockerEngine, runtime: string, image: string | null): Promise<string> {
  if (!image) throw missingBaseImage(runtime, null);
  try {
    await ensureImage(engine, image, '');
  } catch (e) {
    throw missingBaseImage(runtime, image, (e as { detail?: string }).detail ?? (e as Error).message);
  }
  return image;
}

/** The image is on this machine, else one pull is tried; otherwise an Error naming `fix` (its `detail`: the engine's words). */
export async function ensureImage(engine: DockerEngine, image: string, fix: string): Promise<void> {
  try {
    await engine.api.getImage(image).inspect();
    return;
  } catch (e) {
    if (statusOf(e) !== 404) throw new Error(`the Docker Engine could not look up the image ${image}: ${engineMessage(e)}`);
  }
  try {
    const stream = (await engine.api.pull(image)) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => {
      engine.api.modem.followProgress(stream, (err: Error | null, out: { error?: string }[]) => {
        const failed = err ?? out?.find((o) => o.error);
        if (failed) reject(new Error(err ? err.message : (failed as { error: string }).error));
        else resolve();
      });
    });
    await engine.api.getImage(image).inspect();
  } catch (e) {
    throw Object.assign(new Error(`the image ${image} is not on this machine and could not be pulled (${engineMessage(e)}): ${fix}`), { detail: engineMessage(e) });
  }
}
