import { existsSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Limits } from './cgroups.js';
import { CommandError, parseCommand, type CommandStep } from './command.js';
import type { Box, BoxProcess, Identity, RuntimeDriver } from './driver.js';
import type { LogStream } from './logs.js';
import { killGroup, spawnBoxProcess } from './box-process.js';
import { Redactor } from './redact.js';
import { chownTree } from './identity.js';
import { pathWithBin, startSteps } from './app-commands.js';
import { TOOLCHAIN_DIR, toolchainEnv, toolchainSteps, type ToolRequest } from './toolchains.js';
import { BuildError, DOCKER_MESSAGE, noStartMessage } from './build-error.js';
import { baseImageVariable, checkHost, checkStart } from './build-checks.js';
import { dropBuildImage, fullFoldersLine, keepRelease, limitBuildFolders, moveBuildFolders } from './build-disk.js';
import { isMounted } from './disk-image.js';
import { runBuildProcess, StepFailedError, type ProcessBudget } from './build-process.js';
import { NPM_CI_FALLBACK_NOTE, npmCiRefusedLockfile, npmInstallInstead } from './npm-fallback.js';
import { buildReleaseImage, packingDockerfile } from './build-image.js';
import { fetchSource, type BuildSource } from './build-source.js';
import { inside } from '../lib/copy-tree.js';
import { checkRegistry, npmInstallIsNoop } from './build-install.js';
import { timed } from '../lib/spans.js';
import { cacheEnv } from './build-cache.js';
import { hostRuntimeVersion, keepInstallAfter, laterStepsTouchInstall, reuseInstall } from './build-reuse.js';
import { linkCargoTarget, linkNextCache } from './build-framework-cache.js';
import { withCaOptions } from './host-ca.js';
import { applyKeptOutput, keptOutputFor, sourceTreeHash, variablesHash } from './build-output.js';

export { pathWithBin, startScript, startSteps, stepsOf } from './app-commands.js';
export { BuildError } from './build-error.js';
export { baseImageVariable, fixedPort } from './build-checks.js';
export type { BuildSource } from './build-source.js';

export interface BuildCommands {
  installCommand?: string | null;
  buildCommand?: string | null;
  startCommand?: string | null;
  rootDirectory?: string | null;
  /** A static site's output folder (the project's `static.outputDirectory`). */
  outputDirectory?: string | null;
}

/** What detection planned for the app folder (the detect area's Detection, read structurally). */
export interface PlanInput {
  runtime: string;
  version?: { value: string; source: string };
  install: string[];
  build: string[];
  start: string | null;
  static?: { outputDirectory: string; spa: boolean } | null;
  programs: string[];
  tools?: ToolRequest[];
  variables?: Record<string, string>;
  /** What detection ignored and why (an invalid berth.json field), written into the build log. */
  notes?: string[];
}

export interface BuildInput {
  deploymentId: string;
  projectId: string;
  /** Fresh per deployment; removed first if it exists. */
  workDir: string;
  source: BuildSource;
  commands: BuildCommands;
  /** The app folder the fetched source itself names (its berth.json `rootDirectory`), used when the project sets none. */
  rootDirectoryOf?(srcDir: string): string | null;
  /** The build plan of the fetched source's app folder (detection, given by the caller). */
  plan(appDir: string): PlanInput;
  /** Drivers whose releases are images (docker): the release image's tag, `berth/<project-slug>:<deployment-id>`. */
  imageTag?: string;
  /** The project's `config.dockerfile` (relative to the app folder; null: `Dockerfile`). */
  dockerfile?: string | null;
  /** The project's `nodeVersion` option, when set (honoured or the build fails). */
  nodeVersion?: string | null;
  /** The port the app must listen on ($PORT). */
  port: number;
  /** The environment's variables (plain and secret) the build sees. */
  env: Record<string, string>;
  /** Secret values (env secrets, clone credential) redacted from every line. */
  secrets: string[];
  baseEnv: Record<string, string>;
  timeoutMs: number;
  limits: Limits;
  /** `build.diskMb`: the build's folders are limited to it when disk limits are enforced (build-disk.ts). */
  diskMb?: number;
  driver: RuntimeDriver;
  /** The project's own uid/gid (sandbox driver as root); the build's files are made theirs. */
  identity: Identity | null;
  /** The environment's build cache (build-cache.ts), shown read-write in the build's box; null: none. */
  cacheDir?: string | null;
  /** The deployment's `noCache`: image builds run without the engine's layer cache too. */
  noCache?: boolean;
  signal: AbortSignal;
  log(stream: LogStream, line: string): void;
}

export interface BuildResult {
  commit: string | null;
  /** The release's source folder (shown at `/app`). */
  appRoot: string;
  /** The folder the app runs in (the source folder, or its root directory). */
  appDir: string;
  /** The start command the release runs with (null for a static site). */
  startCommand: string | null;
  /** A static site: the built output folder and whether it is a single-page app. */
  static: { dir: string; spa: boolean; prepared?: string } | null;
  /** Variables the plan sets (a folder's railpack.json), for the app too. */
  variables: Record<string, string>;
  /** The release image (docker driver), or null when the release runs from its folder. */
  image: string | null;
  /** The image's own ENTRYPOINT/CMD runs (a Dockerfile without a project start command). */
  imageCommand: boolean;
  /** The output's key (build-output.ts), remembered once the deployment is ready; null: not reusable. */
  outputKey?: string | null;
  /** The last ready build's output is this build's, whole (a static site's published folder: `static.prepared`). */
  reused?: boolean;
}

/**
 * One build: a fresh working directory, the source (upload copy, local folder copy or git fetch at a
 * ref with the credential passed through GIT_ASKPASS, never in a URL), then the install and build
 * commands, each as a process group under the build limits, every output line redacted, the whole
 * bounded by `timeoutMs` and cancelled by `signal` (the group is killed).
 */
export async function runBuild(input: BuildInput): Promise<BuildResult> {
  // The build's folders on their own image of build.diskMb when disk limits are enforced (build-disk.ts).
  // An upload's source is bounded by its upload already: its folders go onto the image only once a
  // step of the project's is about to run (a build that runs none, a hello world's, makes no image).
  const deferred = !!input.diskMb && input.source.type === 'upload';
  if (deferred) await dropBuildImage(input.workDir);
  const limited = !deferred && (await timed('build.image', () => limitBuildFolders(input.workDir, input.diskMb)));
  if (!limited && !deferred) return runBuildIn(input);
  try {
    const result = await runBuildIn(input, deferred ? () => timed('build.image', () => moveBuildFolders(input.workDir, input.diskMb!)) : undefined);
    const site = result.static ? path.relative(path.join(input.workDir, 'src'), result.static.dir) : undefined;
    await timed('build.keep-release', () => keepRelease(input.workDir, site));
    return result;
  } catch (e) {
    const full = await fullFoldersLine(input.workDir, input.diskMb!);
    await dropBuildImage(input.workDir).catch(() => {});
    if (!full) throw e;
    input.log('stdout', `[berth] ${full}`);
    throw new BuildError(full);
  }
}

// Long on purpose: a build's phases in order (source, plan, host checks, steps in one box, output) share its
// folders, redactor and process budget; the phases' work is in build-*.ts, what stays here is their order.
async function runBuildIn(input: BuildInput, limitNow?: () => Promise<void>): Promise<BuildResult> {
  const redact = new Redactor(input.secrets);
  const note = (line: string) => input.log('stdout', `[berth] ${redact.redactString(line)}`);
  const deadline = Date.now() + input.timeoutMs;
  // A folder on its build image (build-disk.ts) is fresh already and cannot be removed itself.
  if (!isMounted(input.workDir)) rmSync(input.workDir, { recursive: true, force: true });
  const srcDir = path.join(input.workDir, 'src');
  const homeDir = path.join(input.workDir, 'home');
  mkdirSync(srcDir, { recursive: true });
  mkdirSync(homeDir, { recursive: true });

  const baseEnv: Record<string, string> = {
    ...input.baseEnv,
    CI: '1',
    BERTH_PROJECT_ID: input.projectId,
    BERTH_DEPLOYMENT_ID: input.deploymentId,
  };

  const budget: ProcessBudget = { signal: input.signal, deadline, timeoutMs: input.timeoutMs, secrets: input.secrets, log: (stream, line) => input.log(stream, line) };
  const runProcess = (start: () => BoxProcess, label: string, killAll: () => void | Promise<void>, step?: string): Promise<string> => runBuildProcess(budget, start, label, killAll, step);

  /** Berth's own tools (git) on the host, as the server, with nothing of the server's environment. */
  const runHost = (argv: string[], cwd: string, extraEnv: Record<string, string>, label: string): Promise<string> => {
    let pid: number | undefined;
    return runProcess(
      () => {
        const p = spawnBoxProcess(argv, cwd, { ...baseEnv, HOME: homeDir, ...extraEnv });
        pid = p.pid;
        return p;
      },
      label,
      () => {
        killGroup(pid, 'SIGKILL');
      },
    );
  };

  /** A command of the project's, in the build's box; nothing it started outlives the step (`step`: its name in the log). */
  const runStep = (box: Box, argv: string[], cwd: string, extraEnv: Record<string, string>, label: string, step: string): Promise<string> =>
    runProcess(() => box.exec(argv, { cwd, env: withCaOptions({ ...baseEnv, HOME: box.paths.home ?? box.paths.tmp, ...extraEnv }, baseEnv) }), label, () => box.killAll(), step);

  // ---- source
  const commit = await timed('build.source', () => fetchSource(input.source, { workDir: input.workDir, srcDir, signal: input.signal, note, runHost }));
  // The fetched tree's hash, before anything of the project's runs: an unchanged source reuses the last output (build-output.ts).
  const tree = input.cacheDir ? await timed('build.tree-hash', () => sourceTreeHash(srcDir, input.source.type === 'git' ? ['.git'] : [])).catch(() => null) : null;
  // The source becomes the project's: its build steps write into it as the project's own uid.
  if (input.identity) {
    await timed('build.chown', () => chownTree([srcDir, homeDir], input.identity!));
  }

  // ---- the plan: the project's own commands win over the detected ones
  let appDir = srcDir;
  const rootDirectory = input.commands.rootDirectory || input.rootDirectoryOf?.(srcDir) || null;
  if (rootDirectory) {
    const rd = path.resolve(srcDir, rootDirectory.replace(/^\/+/, ''));
    // Resolved through links: a source's link to a host folder (`app -> /etc`) never becomes the app folder or a build context.
    if (!inside(rd, srcDir) || !existsSync(rd) || !within(rd, srcDir)) throw new BuildError(`the root directory ${rootDirectory}${input.commands.rootDirectory ? '' : ' (berth.json)'} does not exist in the source`);
    appDir = rd;
  }
  const plan = await timed('build.plan', () => input.plan(appDir));
  for (const line of plan.notes ?? []) note(line);
  const own = input.commands;
  const install = own.installCommand ?? joined(plan.install);
  const build = own.buildCommand ?? joined(plan.build);
  const start = own.startCommand ?? plan.start;
  const outputDirectory = own.outputDirectory ?? plan.static?.outputDirectory ?? null;
  const isStatic = !start && !!(plan.static || own.outputDirectory);
  const images = input.driver.images;
  const imageBuild = (contextDir: string, dockerfile: { path: string } | { text: string }, step: string): Promise<string> => buildReleaseImage(images!, input, contextDir, dockerfile, deadline, step);

  // ---- a Dockerfile (docker driver): the image is the release
  if (images && (plan.runtime === 'docker' || input.dockerfile)) {
    const name = input.dockerfile ?? 'Dockerfile';
    const file = path.resolve(appDir, name);
    if (!inside(file, srcDir) || !existsSync(file) || !within(file, srcDir)) throw new BuildError(`the Dockerfile ${name} does not exist in the source: set config.dockerfile to the Dockerfile's path below the root directory`);
    note(`plan: docker, building ${name}${own.startCommand ? `; the project's start command replaces its CMD: ${own.startCommand}` : ''}`);
    const out = await keptOutputFor(input.cacheDir, tree, { dockerfile: path.relative(srcDir, file), commit, start: own.startCommand ?? null, env: variablesHash(input.env) });
    const reused = !!out?.kept && (await applyKeptOutput(out.kept, { srcDir, imageTag: input.imageTag, tag: images.tag?.bind(images) }, note));
    const image = reused ? input.imageTag! : await imageBuild(appDir, { path: file }, `building ${name}`);
    note(`build finished; image ${image}`);
    return { commit, appRoot: srcDir, appDir, startCommand: own.startCommand ?? null, static: null, variables: {}, image, imageCommand: !own.startCommand, outputKey: out?.key ?? null, reused };
  }

  note(`plan: ${plan.runtime}${plan.version ? ` ${plan.version.value} (${plan.version.source})` : ''}${isStatic ? `, a static site from ${outputDirectory}` : ''}`);
  if (plan.runtime === 'docker' && !own.startCommand) throw new BuildError(DOCKER_MESSAGE);
  if (!start && !isStatic) throw new BuildError(noStartMessage(plan.runtime));

  // ---- what the host must offer, checked before anything runs
  let hostPath: string;
  if (input.driver.boxPath !== undefined) {
    // Boxes run on an image (docker): its programs and Node version, not the host's.
    hostPath = input.driver.boxPath;
    const base = images?.baseImage(plan.runtime);
    if (images && !base) throw new BuildError(`no base image for the ${plan.runtime} runtime: set ${baseImageVariable(plan.runtime)} to an image with its toolchain`);
    if (base) note(`build image: ${base}`);
    // Missing (and not pullable): the same message for every plan, before anything runs or BuildKit speaks.
    if (images?.ensureBaseImage && (!isStatic || install || build || plan.tools?.length)) {
      await images.ensureBaseImage(plan.runtime).catch((e: Error) => {
        throw new BuildError(e.message);
      });
    }
    checkStart(start, input.port);
  } else {
    // Only the PATH folders the build's box can see (the sandbox shows the system folders, not /root).
    hostPath = (input.baseEnv.PATH ?? '').split(path.delimiter).filter((d) => d && (input.driver.sees?.(d) ?? true)).join(path.delimiter);
    checkHost(plan, { hostPath, nodeVersion: input.nodeVersion ?? null, start, port: input.port }, note);
  }

  // ---- toolchains, install and build, in one box
  const tools = plan.tools ?? [];
  /** `planned`: the command is the detected plan's (the project's own is unset, or the plan's as a scan copied it). */
  const steps: { label: string; run: CommandStep[]; shown: string; planned: boolean }[] = [];
  const variables = plan.variables ?? {};
  const commands = [
    ['install', install],
    ['build', build],
  ] as const;
  const parseEnv = { ...baseEnv, ...variables, ...input.env, PORT: String(input.port) };
  for (const [label, cmd] of commands) {
    if (!cmd) {
      note(`no ${label} command; skipping`);
      continue;
    }
    if (label === 'install' && cmd === 'npm install' && cmd === joined(plan.install) && (await npmInstallIsNoop(srcDir, appDir))) {
      note('install: skipped: package.json names no dependencies and no install scripts (npm install would only write a lockfile)');
      continue;
    }
    try {
      steps.push({ label, run: parseCommand(cmd, parseEnv), shown: cmd, planned: cmd === joined(label === 'install' ? plan.install : plan.build) });
    } catch (e) {
      throw new BuildError(`the ${label} command cannot run: ${(e as CommandError).message}`);
    }
  }
  if (start) {
    try {
      await startSteps(appDir, start, {}, note, srcDir);
    } catch (e) {
      throw new BuildError(`the start command cannot run: ${(e as CommandError).message}`);
    }
  }
  if (tools.length) {
    // corepack writes its shims into a folder that must exist; it belongs to the project like the source.
    const dir = path.join(srcDir, TOOLCHAIN_DIR);
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    if (input.identity) await chownTree(dir, input.identity);
  }
  const runtimeVersion = images?.baseImage(plan.runtime) ?? hostRuntimeVersion(plan.runtime, plan.programs, hostPath);
  // ---- an unchanged source and plan: the last ready build's output, whole (build-output.ts)
  const facts = { kind: isStatic ? 'static' : images ? 'image' : 'folder', rootDirectory: path.relative(srcDir, appDir), commit, runtime: plan.runtime, version: plan.version ?? null, install, build, start, outputDirectory, spa: plan.static?.spa ?? false, tools, variables: variablesHash(variables), env: variablesHash(input.env), runtimeVersion, nodeVersion: input.nodeVersion ?? null, port: input.port };
  const out = await timed('build.output-reuse', () => keptOutputFor(input.cacheDir, tree, facts));
  const outputKey = out?.key ?? null;
  if (out?.kept && (await applyKeptOutput(out.kept, { srcDir, imageTag: input.imageTag, tag: images?.tag?.bind(images) }, note))) {
    const base = { commit, appRoot: srcDir, appDir, variables, outputKey, reused: true, imageCommand: false };
    note(`build finished; ${isStatic ? `a static site from ${outputDirectory}` : `${images ? `image ${input.imageTag}; ` : ''}start command: ${start}`}`);
    if (isStatic) return { ...base, startCommand: null, static: { dir: path.resolve(appDir, outputDirectory ?? '.'), spa: plan.static?.spa ?? false, prepared: out.kept.dir! }, image: null };
    return { ...base, startCommand: start!, static: null, image: images ? input.imageTag! : null };
  }
  // ---- a kept install whose lockfile, command and runtime match is copied in, its step left out (build-reuse.ts)
  let prepared = false;
  const prepare = async () => { if (!prepared) { prepared = true; await limitNow?.(); } };
  // Nothing of the project's runs after a reused install (no build step, no tools): its folders need no disk image.
  const runsMore = tools.length > 0 || steps.some((st) => st.label !== 'install');
  const installAt = steps.findIndex((st) => st.label === 'install');
  // Mounted only when no later step removes or reinstalls node_modules (it cannot remove a mount point).
  const mountIn = runsMore && !laterStepsTouchInstall(steps.filter((st) => st.label !== 'install').map((st) => st.shown)) ? input.workDir : undefined;
  const reuse = installAt < 0 ? null : await timed('build.install-reuse', () => reuseInstall(input.cacheDir, { srcDir, appDir, runtime: plan.runtime, install: steps[installAt]!.shown, runtimeVersion, tools, env: { ...variables, ...input.env }, samePathEachBuild: input.driver.name !== 'process' }, input.identity, runsMore ? prepare : async () => {}, note, mountIn));
  // A reused install's step is left out, or replaced by what must still run (`composer dump-autoload`).
  if (reuse?.reused) steps.splice(installAt, 1, ...(reuse.then ? [{ label: 'install', run: parseCommand(reuse.then, parseEnv), shown: reuse.then, planned: false }] : []));
  if (steps.length || tools.length) {
    await prepare();
    let box: Box;
    try {
      box = await timed('build.box-open', () => input.driver.open({ kind: 'build', projectId: input.projectId, name: `build-${input.deploymentId}`, identity: input.identity, limits: input.limits, appDir: srcDir, homeDir, runtime: plan.runtime, ...(input.cacheDir ? { cacheDir: input.cacheDir } : {}) }));
    } catch (e) {
      throw new BuildError(`the build cannot run: ${(e as Error).message}`);
    }
    // Next.js's own build cache (.next/cache) lives in the environment's cache folder (build-framework-cache.ts).
    let nextCache: Awaited<ReturnType<typeof linkNextCache>> = null;
    // Cargo's target (compiled dependencies) likewise; its binaries come back into the release after the build.
    let unlinkCargo: (() => Promise<void>) | null = null;
    let cargoOut: Error | null = null;
    try {
      if (input.cacheDir && box.paths.cache && steps.some((st) => st.label === 'build')) nextCache = await linkNextCache({ srcDir, appDir, hostCache: input.cacheDir, insideCache: box.paths.cache, identity: input.identity }).catch(() => null);
      if (input.cacheDir && box.paths.cache && plan.runtime === 'rust' && steps.some((st) => st.label === 'build')) unlinkCargo = await linkCargoTarget({ appDir, hostCache: input.cacheDir, insideCache: box.paths.cache, identity: input.identity }).catch(() => null);
      // The package managers' caches first: the project's own variables (an npm_config_cache it sets) win.
      const cached = box.paths.cache ? { ...cacheEnv(box.paths.cache, plan.runtime, tools), ...nextCache?.env } : {};
      const stepEnv = { ...cached, ...variables, ...input.env, ...toolchainEnv(box.inside(srcDir)), PATH: pathWithBin(box.inside(appDir), hostPath, box.inside(srcDir)) };
      // ---- the way out: the registry the install uses, reached from inside the box (egress.ts)
      if (steps.some((st) => st.label === 'install' && st.shown !== reuse?.then) || tools.length) await timed('build.egress-check', () => checkRegistry(box, plan.runtime, { ...variables, ...input.env }, appDir, stepEnv.PATH, input.driver, note));
      // Toolchain commands name folders as the box shows them (the source is /app in a sandbox).
      for (const t of toolchainSteps(box.inside(srcDir), tools)) {
        note(`toolchain: ${t.label}`);
        await runStep(box, t.argv, srcDir, stepEnv, 'the toolchain command', `toolchain: ${t.label}`);
      }
      for (const step of steps) {
        note(`${step.label}: ${step.shown}`);
        const name = `${step.label}: ${step.shown}`;
        const what = `the ${step.label} command`;
        for (const st of step.run) {
          const env = { ...stepEnv, ...st.env };
          try {
            await timed('build.step', () => runStep(box, st.argv, appDir, env, what, name), st.argv.join(' '));
          } catch (e) {
            // A planned `npm ci` that npm refuses because the lockfile does not match package.json: `npm install` instead.
            const instead = step.planned && step.label === 'install' ? npmInstallInstead(st.argv) : null;
            if (!instead || !(e instanceof StepFailedError) || !npmCiRefusedLockfile(e.output)) throw e;
            note(NPM_CI_FALLBACK_NOTE);
            await runStep(box, instead, appDir, env, what, `install: ${instead.join(' ')}`);
          }
        }
      }
    } finally {
      await timed('build.box-close', () => box.dispose()).catch(() => {});
      await nextCache?.unlink().catch(() => {});
      cargoOut = unlinkCargo ? await unlinkCargo().then(() => null, (e: Error) => e) : null;
    }
    if (cargoOut) throw new BuildError(`the build's Cargo output could not be taken out of the build cache: ${cargoOut.message}`);
  }
  await timed('build.keep-install', () => keepInstallAfter(input.cacheDir, reuse, appDir, note, input.identity, input.deploymentId));
  if (isStatic) {
    const site = path.resolve(appDir, outputDirectory ?? '.');
    if (!inside(site, srcDir) || !existsSync(site)) throw new BuildError(`the build left no output directory ${outputDirectory}: set static.outputDirectory to the folder the build writes`);
    note(`build finished; a static site from ${outputDirectory}`);
    return { commit, appRoot: srcDir, appDir, startCommand: null, static: { dir: site, spa: plan.static?.spa ?? false }, variables, image: null, imageCommand: false, outputKey };
  }
  if (images) {
    // The built folder becomes the release image, on the runtime's base image, owned by the project's uid.
    const owner = input.identity ? `${input.identity.uid}:${input.identity.gid}` : '1000:1000';
    const text = packingDockerfile(images.baseImage(plan.runtime)!, owner, srcDir);
    note('packing the build into the release image');
    const image = await imageBuild(srcDir, { text }, 'packing the build into the release image');
    note(`build finished; image ${image}; start command: ${start}`);
    return { commit, appRoot: srcDir, appDir, startCommand: start!, static: null, variables, image, imageCommand: false, outputKey };
  }
  note(`build finished; start command: ${start}`);
  return { commit, appRoot: srcDir, appDir, startCommand: start!, static: null, variables, image: null, imageCommand: false, outputKey };
}

/** Whether `p`, with every link resolved, is `root` or below it (root resolved too). */
function within(p: string, root: string): boolean {
  try {
    const real = realpathSync(p);
    const base = realpathSync(root);
    return real === base || real.startsWith(base + path.sep);
  } catch {
    return false;
  }
}

const joined = (steps: string[]): string | null => (steps.length ? steps.join(' && ') : null);
