import { createHash } from 'node:crypto';
import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { BuildError } from './build-error.js';
import type { BuildInput } from './build.js';
import type { RuntimeDriver } from './driver.js';
import type { LogStream } from './logs.js';
import { Redactor } from './redact.js';
import { watchSilence } from './silent-step.js';

/**
 * Builds the release image through the driver's image builder: plain variables as build args, secret
 * ones as BuildKit secrets (never a layer or an arg), the output into the build log (redacted), bounded
 * by the build's deadline and cancelled with it; silent for the still-running interval, the log gets
 * `[berth] still running: <step> ...` (`step`: the build's name as the log shows it). Answers the image's tag.
 */
export async function buildReleaseImage(
  images: NonNullable<RuntimeDriver['images']>,
  input: Pick<BuildInput, 'imageTag' | 'secrets' | 'env' | 'projectId' | 'deploymentId' | 'signal' | 'log' | 'diskMb' | 'noCache' | 'workDir' | 'cacheDir'>,
  contextDir: string,
  dockerfile: { path: string } | { text: string },
  deadline: number,
  step: string,
): Promise<string> {
  if (!input.imageTag) throw new BuildError('internal error: no image tag for a docker build');
  const redact = new Redactor(input.secrets);
  const secretValues = new Set(input.secrets);
  const buildArgs: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.env)) (secretValues.has(v) ? secrets : buildArgs)[k] = v;
  const silence = watchSilence(step, (line) => input.log('stdout', line));
  try {
    const contextAlias = contextAliasOf(input.workDir, input.cacheDir);
    await images.build({
      contextDir,
      ...(contextAlias ? { contextAlias } : {}),
      ...('path' in dockerfile ? { dockerfile: dockerfile.path } : { dockerfileText: dockerfile.text }),
      tag: input.imageTag,
      buildArgs,
      secrets,
      labels: { 'berth.project': input.projectId, 'berth.deployment': input.deploymentId },
      signal: input.signal,
      deadline,
      ...(input.diskMb ? { diskMb: input.diskMb } : {}),
      ...(input.noCache ? { noCache: true } : {}),
      log: (stream: LogStream, line: string) => {
        silence.output();
        input.log(stream, redact.redactString(line));
      },
    });
  } catch (e) {
    throw new BuildError(redact.redactString((e as Error).message));
  } finally {
    silence.stop();
  }
  return input.imageTag;
}

/**
 * The stable path of a project environment's image build contexts (docker/build-context.ts): beside the
 * project's build folders (`<data>/builds/<project>/.context-<hash of the environment's cache folder>`),
 * where no build's box reaches. None without the build cache (`noCache`, `BERTH_BUILD_CACHE_MB=0`): the
 * whole context is sent, as before.
 */
export function contextAliasOf(workDir: string, cacheDir: string | null | undefined): string | undefined {
  if (!cacheDir) return undefined;
  const key = createHash('sha256').update(path.resolve(cacheDir)).digest('hex').slice(0, 16);
  return path.join(path.dirname(path.resolve(workDir)), `.context-${key}`);
}

/** Names COPY would read as patterns or flags: such a folder is packed with one COPY. */
const PLAIN_NAME = /^[A-Za-z0-9._@+=,%~][A-Za-z0-9._@+=,%~ -]*$/;
/** More top-level folders than this: one COPY (an image has at most 127 layers). */
const MAX_FOLDER_LAYERS = 32;

/**
 * The generated Dockerfile that packs a built folder into its release image, in layers ordered for reuse
 * (contract section 21): `node_modules` first (unchanged dependencies are the same layer, which the engine's
 * BuildKit cache reuses and stores once), then each top-level folder, then the top-level files. A folder
 * whose top level holds a link, a name COPY would read as a pattern, or many folders is packed with one
 * `COPY . /app` as before. Every layer is owned by `owner`.
 */
export function packingDockerfile(base: string, owner: string, dir: string): string {
  if (!base || /[\s\x00-\x1f\x7f]/.test(base)) throw new BuildError(`the base image "${base}" is not an image reference`);
  const head = `FROM ${base}`;
  const tail = ['WORKDIR /app', `USER ${owner}`, ''];
  const whole = [head, `COPY --chown=${owner} . /app`, ...tail].join('\n');
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n !== '.git').sort();
  } catch {
    return whole;
  }
  const dirs: string[] = [];
  const files: string[] = [];
  for (const name of names) {
    const st = lstatSync(path.join(dir, name), { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink() || !PLAIN_NAME.test(name) || !(st.isDirectory() || st.isFile())) return whole;
    (st.isDirectory() ? dirs : files).push(name);
  }
  if (!dirs.includes('node_modules') || dirs.length > MAX_FOLDER_LAYERS) return whole;
  const copy = (from: string[], to: string) => `COPY --chown=${owner} ${JSON.stringify([...from, to])}`;
  const ordered = ['node_modules', ...dirs.filter((d) => d !== 'node_modules')];
  const lines = [head, ...ordered.map((d) => copy([d], `/app/${d}`))];
  if (files.length) lines.push(copy(files, '/app/'));
  return [...lines, ...tail].join('\n');
}
