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
  input: Pick<BuildInput, 'imageTag' | 'secrets' | 'env' | 'projectId' | 'deploymentId' | 'signal' | 'log' | 'diskMb'>,
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
    await images.build({
      contextDir,
      ...('path' in dockerfile ? { dockerfile: dockerfile.path } : { dockerfileText: dockerfile.text }),
      tag: input.imageTag,
      buildArgs,
      secrets,
      labels: { 'berth.project': input.projectId, 'berth.deployment': input.deploymentId },
      signal: input.signal,
      deadline,
      ...(input.diskMb ? { diskMb: input.diskMb } : {}),
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
