/** Why a build failed, in words shown to the user in the build log. */
export class BuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildError';
  }
}

/** A Dockerfile project on a runtime without images. */
export const DOCKER_MESSAGE =
  'this project builds from its Dockerfile, which needs the docker runtime (BERTH_RUNTIME=docker); this server runs builds in its sandbox: start Berth with the docker runtime, or set the project\'s install, build and start commands to build it without Docker';

/** A plan with nothing to run. */
export function noStartMessage(runtime: string): string {
  if (runtime === 'unknown') {
    return 'Berth could not tell how to build this folder (no package.json, requirements.txt, go.mod, Cargo.toml, Gemfile, composer.json, index.html, Procfile or other known file): set the project\'s startCommand, or add an index.html for a static site';
  }
  return `no start command: the ${runtime} plan found nothing to run; set the project's startCommand (or a Procfile web: line)`;
}
