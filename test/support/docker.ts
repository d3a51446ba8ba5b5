import { DockerEngine } from '../../src/runtime/docker/engine.js';

/** The base image the docker runtime's tests run on (scripts/docker-base-images.sh builds it; CI always has it). */
export const BASE_IMAGE = 'berth-base/node:20';
/** The 20.10 CLI, whose BuildKit the tests build their own images with. */
export const DOCKER = '/usr/bin/docker';

/**
 * The engine of DOCKER_HOST for a suite that needs one, and the `{ skip }` option of its tests: the
 * reason (printed once, naming the suite) when no engine answers, or when it lacks `image`.
 */
export async function dockerSuite(name: string, opts: { image?: string } = {}): Promise<{ engine: DockerEngine; skip: string | null; withEngine: { skip: string | false } }> {
  const engine = DockerEngine.fromEnv();
  // A loaded machine can keep the engine from answering one ping in time: a few more before skipping.
  const ping = async (): Promise<void> => {
    for (let i = 0; ; i++) {
      try {
        return await engine.ping();
      } catch (e) {
        if (i >= 4 || !/did not answer within/.test((e as Error).message)) throw e;
        await new Promise((r) => setTimeout(r, 1000 * (i + 1)));
      }
    }
  };
  const skip = await ping().then(
    async () => (opts.image && !(await engine.api.getImage(opts.image).inspect().then(() => true, () => false)) ? `the image ${opts.image} is missing (scripts/docker-base-images.sh builds it)` : null),
    (e: Error) => `no Docker Engine answers (${e.message})`,
  );
  if (skip) console.log(`# ${name}: skipping the engine tests: ${skip}`);
  return { engine, skip, withEngine: { skip: skip ?? false } };
}
