import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { ignoredLine } from '../../lib/tenant-file.js';
import { BuildError, runBuild, type BuildResult, type BuildSource } from '../../runtime/build.js';
import { redactText } from '../../runtime/redact.js';
import { closeBuildCache, openBuildCache, type BuildCacheSpec } from '../../runtime/build-cache.js';
import { linkTree, rememberOutput, type KeptOutput } from '../../runtime/build-output.js';
import { projectQueries, resolveCloneCredential, type ProjectRow } from '../projects/index.js';
import { envForRun } from './run-env.js';
import { uploadSourceDir } from '../uploads/index.js';
import { planBuild, sourceRootDirectory } from '../detect/index.js';
import { prepareStaticSite } from '../../edge/static-site.js';
import * as store from '../deployments/index.js';
import { deploymentSettled, environmentUrl } from '../deployments/index.js';
import { appKeyOf } from '../../runtime/app-key.js';
import { runtimeOf } from './host.js';
import { span, timed } from '../../lib/spans.js';

/**
 * The build job: one queued deployment built and released (queued -> building -> deploying ->
 * ready, or failed / cancelled / superseded). A failed build or a release that fails its health
 * check leaves the previous release serving.
 */

export function buildDir(ctx: AppContext, projectId: string, deploymentId: string): string {
  return path.join(ctx.config.dataDir, 'builds', path.basename(projectId), path.basename(deploymentId));
}

function gitUrl(ctx: AppContext, p: ProjectRow): string {
  // BERTH_GITHUB_WEB_URL names the git host (GitHub, GitHub Enterprise Server, or a mirror).
  const web = ctx.config.github.webUrl;
  return `${web}/${encodeURIComponent(p.gitOwner ?? '')}/${encodeURIComponent(p.gitRepo ?? '')}.git`;
}

/** Where the build's source comes from; the clone token, when one is used, joins the secrets redacted from logs. */
async function buildSource(ctx: AppContext, orgId: string, project: ProjectRow, build: store.DeploymentBuildRow | undefined, secrets: string[], ref: string | null): Promise<BuildSource> {
  const sourceType = build?.sourceType ?? project.sourceType;
  if (sourceType === 'local') return { type: 'local', path: project.localPath ?? '', roots: ctx.config.localRoots };
  if (sourceType === 'upload') {
    const dir = build?.uploadDir ?? (await uploadSourceDir(ctx, orgId, project.id));
    if (!dir) throw new BuildError('the project has no uploaded source: upload the folder again');
    return { type: 'upload', dir };
  }
  if (sourceType === 'git') {
    let token: string | null = null;
    let username: string | null = null;
    const cred = await resolveCloneCredential(ctx, orgId, project.id);
    if (cred) {
      token = cred.token;
      username = cred.username;
    } else if (ctx.ports.cloneTokens && project.gitOwner && project.gitRepo) {
      // The git provider's short-lived installation token, when it has one for the repository.
      const t = await ctx.ports.cloneTokens(ctx, orgId, project.gitOwner, project.gitRepo).catch(() => null);
      if (t) {
        token = t.token;
        username = t.username ?? 'x-access-token';
      }
    }
    if (token) secrets.push(token);
    return { type: 'git', url: gitUrl(ctx, project), ref, token, username };
  }
  throw new BuildError('the project has no source');
}

/** The release image of a deployment under the docker runtime (contract section 13). */
export function imageTagOf(projectSlug: string, deploymentId: string): string {
  return `berth/${projectSlug.toLowerCase()}:${deploymentId}`;
}

type BuildLog = (stream: 'stdout' | 'stderr', line: string) => void;

/**
 * Runs the build of a deployment (runtime/build.ts) with the project's commands, its limits and the
 * environment's own build cache (previews start from production's), outside the build's folders. A
 * cache that cannot be opened (a full disk) never fails the build: it runs without one. `preBuilt`
 * ends the job's pre-build span, as the build starts.
 */
async function buildRelease(ctx: AppContext, job: { orgId: string; id: string; environment: string; noCache: boolean; preBuilt: () => void }, project: ProjectRow, source: BuildSource, env: Record<string, string>, secrets: string[], signal: AbortSignal, log: BuildLog) {
  const rt = runtimeOf(ctx);
  const timeoutSeconds = Number(process.env.BERTH_BUILD_TIMEOUT_SECONDS ?? 900);
  const identity = await rt.releases.identityOf(job.orgId, project.id);
  // The environment's own build cache (previews start from production's), outside the build's folders.
  const cacheSpec: BuildCacheSpec = { dataDir: ctx.config.dataDir, projectId: project.id, environment: job.environment, identity, capMb: ctx.config.buildCacheMb, noCache: job.noCache };
  const cacheNote = (line: string) => log('stdout', `[berth] ${line}`);
  // A cache that cannot be opened (a full disk) never fails the build: it runs without one.
  const cache = await timed('job.cache-open', () => openBuildCache(cacheSpec, cacheNote)).catch((err: Error) => {
    ctx.log.warn({ projectId: project.id, err: err.message }, 'could not open the build cache');
    cacheNote('cache: not used: it could not be opened (the server log says why)');
    return null;
  });
  job.preBuilt();
  const result = await timed('job.build', async () => runBuild({
    deploymentId: job.id,
    projectId: project.id,
    workDir: buildDir(ctx, project.id, job.id),
    source,
    commands: { installCommand: project.installCommand, buildCommand: project.buildCommand, startCommand: project.startCommand, rootDirectory: project.rootDirectory, outputDirectory: project.outputDirectory },
    rootDirectoryOf: sourceRootDirectory,
    plan: (appDir) => planBuild(path.join(buildDir(ctx, project.id, job.id), 'src'), appDir, (rel, why) => log('stdout', `[berth] ${ignoredLine(rel, why)}`)),
    nodeVersion: project.nodeVersion,
    imageTag: rt.driver.images ? imageTagOf(project.slug, job.id) : undefined,
    dockerfile: project.dockerfile,
    port: Number(project.port) > 0 ? Number(project.port) : 3000,
    env,
    secrets,
    baseEnv: rt.baseEnv(),
    timeoutMs: (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0 ? timeoutSeconds : 900) * 1000,
    limits: rt.releases.limitsOf(project.resources, 'build'),
    diskMb: rt.releases.diskLimits.enforced ? rt.releases.diskMbOf(project.resources, 'build') : undefined,
    driver: rt.driver,
    identity,
    cacheDir: cache?.dir ?? null,
    noCache: job.noCache,
    signal,
    log,
  }).finally(() => timed('job.cache-close', () => closeBuildCache(cache, cacheSpec, cacheNote)).catch((err) => ctx.log.warn({ projectId: project.id, err: (err as Error).message }, 'could not cut the build cache back'))));
  // Once ready, this build's output is the environment's last (an unchanged next build reuses it: build-output.ts).
  const remember = async (output: Omit<KeptOutput, 'key' | 'deploymentId'>): Promise<void> => {
    if (cache && result.outputKey) await rememberOutput(cache.dir, { key: result.outputKey, deploymentId: job.id, ...output }).catch((err: Error) => ctx.log.warn({ projectId: project.id, err: err.message }, 'could not remember the build output'));
  };
  return { result, remember };
}

/**
 * Production's new release started beside the serving one and swapped in once healthy (one swap at a
 * time per project: a rollback waits). False when the deployment was cancelled or superseded while it
 * started (the release that should serve is put back).
 */
async function releaseProduction(ctx: AppContext, d: store.DeploymentRow, current: ProjectRow, result: BuildResult, log: BuildLog, onReady: () => Promise<void>): Promise<boolean> {
  const rt = runtimeOf(ctx);
  log('stdout', '[berth] starting the new release and waiting for its health check');
  const fresh = await envForRun(ctx, d.orgId, d.projectId, 'production');
  const releaseSpec = await rt.releases.releaseSpec(d.orgId, d.projectId, d.id, result.appDir, result.startCommand, current, { ...result.variables, ...fresh.env }, fresh.secrets, { image: result.image, imageCommand: result.imageCommand }, 'production', (line) => log('stdout', `[berth] ${line}`));
  // One swap at a time per project (a rollback waits): the app started here and the current pointer agree.
  const ok = await rt.releaseSwap(d.projectId, async () => {
    try {
      await timed('job.deploy', () => rt.supervisor.deploy(releaseSpec, { step: `start: ${result.startCommand ?? "the image's own command"}`, log: (line) => log('stdout', line) }));
    } catch (e) {
      throw new BuildError(`the new release did not start: ${(e as Error).message}; the previous release keeps serving`);
    }
    if (await store.markReady(ctx.db, d, ['deploying'])) return true;
    // Cancelled or superseded while it started: put the release that should serve back.
    const back = await rt.releases.specFor(d.orgId, d.projectId);
    if (back) await rt.supervisor.deploy(back).catch(() => {});
    else await rt.supervisor.stop(d.projectId);
    return false;
  });
  if (!ok) return false;
  await onReady();
  rt.invalidate(d.projectId);
  log('stdout', '[berth] ready: the new release is serving');
  return true;
}

/** A cancel or a newer deployment recorded by another instance sharing the database also stops the build. */
function watchForStop(ctx: AppContext, orgId: string, id: string, abort: AbortController): NodeJS.Timeout {
  const watch = setInterval(() => {
    void store
      .findDeployment(ctx.db, orgId, id)
      .then((now) => {
        if (now && !(store.IN_FLIGHT as readonly string[]).includes(now.status)) abort.abort();
      })
      .catch(() => {});
  }, 1000);
  watch.unref();
  return watch;
}

/**
 * Builds and deploys one deployment (the job of kind BUILD_JOB). `attempt` above 1 means the job was
 * claimed again because the process that ran it stopped renewing its lock (it died: kill -9, a lost
 * machine, with several instances on one PostgreSQL); a deployment it left in flight is failed then,
 * naming why, rather than left `building` forever. `noCache`: the build neither restores nor saves the
 * project's build cache (`POST /api/deployments { noCache: true }`).
 */
export async function runDeploymentJob(ctx: AppContext, payload: { deploymentId: string; orgId: string; noCache?: boolean }, jobSignal: AbortSignal, attempt = 1): Promise<void> {
  const { deploymentId: id, orgId } = payload;
  const rt = runtimeOf(ctx);
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (d && attempt > 1 && (d.status === 'building' || d.status === 'deploying') && !rt.building.has(id)) {
    const failed = await store.transition(ctx.db, orgId, id, ['building', 'deploying'], { status: 'failed', error: 'interrupted: the Berth instance running this build stopped', finishedAt: nowIso() });
    if (failed) deploymentSettled(ctx, orgId, id);
    return;
  }
  if (!d || d.status !== 'queued') return;
  const whole = span('job.total');
  const pre = span('job.pre-build');
  const project = await projectQueries.findProject(ctx.db, orgId, d.projectId);
  if (!project) return;
  const build = await store.findBuild(ctx.db, orgId, id);
  if (!(await store.transition(ctx.db, orgId, id, ['queued'], { status: 'building', startedAt: nowIso() }))) return;

  const abort = new AbortController();
  rt.building.set(id, abort);
  const onJobAbort = () => abort.abort();
  jobSignal.addEventListener('abort', onJobAbort, { once: true });
  const watch = watchForStop(ctx, orgId, id, abort);
  const logFile = rt.logs.build(project.id, id);
  const log = (stream: 'stdout' | 'stderr', line: string) => logFile.append({ ts: nowIso(), stream, line });
  let secrets: string[] = [];
  try {
    // A runtime that cannot run anything (bubblewrap missing, Docker unreachable) fails the deployment at once, naming the fix.
    const driver = (await rt.driver.recheck?.()) ?? rt.driver.status();
    if (!driver.ready) throw new BuildError(`the ${driver.driver} runtime cannot run builds: ${driver.reason}`);
    const resolved = await envForRun(ctx, orgId, project.id, d.environment);
    secrets = [...resolved.secrets];
    const source = await buildSource(ctx, orgId, project, build, secrets, d.ref);
    log('stdout', `[berth] building ${id} of ${project.slug} (${d.environment})`);
    const { result, remember } = await buildRelease(ctx, { orgId, id, environment: d.environment, noCache: payload.noCache === true, preBuilt: pre }, project, source, resolved.env, secrets, abort.signal, log);
    if (result.static) {
      if (await releaseStaticSite(ctx, orgId, project, id, d.environment, result.commit, result.static, log)) await remember({ kind: 'static', dir: path.join(buildDir(ctx, project.id, id), 'static') });
      return;
    }
    const output: Omit<KeptOutput, 'key' | 'deploymentId'> = result.image ? { kind: 'image', image: result.image } : { kind: 'folder', dir: result.appRoot };
    await store.updateBuild(ctx.db, orgId, id, {
      releaseDir: result.appDir,
      startCommand: result.startCommand,
      planVariables: Object.keys(result.variables).length ? JSON.stringify(result.variables) : null,
      image: result.image,
      imageCommand: result.imageCommand ? 1 : null,
    });
    if (!(await store.transition(ctx.db, orgId, id, ['building'], { status: 'deploying', commit: result.commit }))) return;

    const current = await projectQueries.findProject(ctx.db, orgId, project.id);
    if (d.environment === 'production' && current && current.status === 'enabled') {
      if (!(await releaseProduction(ctx, d, current, result, log, () => remember(output)))) return;
      whole();
      deploymentSettled(ctx, orgId, id);
    } else if (d.environment !== 'production') {
      if (!(await releasePreview(ctx, d, current?.status === 'enabled', log))) return;
      await remember(output);
    } else {
      if (!(await rt.releaseSwap(project.id, () => store.markReady(ctx.db, d, ['deploying'])))) return;
      await remember(output);
      rt.invalidate(project.id);
      log('stdout', '[berth] ready; the project is disabled, so the release starts when it is enabled');
      deploymentSettled(ctx, orgId, id);
    }
    await rt.releaseSwap(project.id, () => rt.releases.pruneReleases(orgId, project.id)).catch(() => {});
  } catch (e) {
    const raw = e instanceof BuildError ? e.message : `internal error: ${(e as Error).message}`;
    const message = redactText(jobSignal.aborted || rt.isShuttingDown ? 'interrupted: the server stopped during the build' : raw, secrets).slice(0, 2000);
    const failed = await store.transition(ctx.db, orgId, id, ['building', 'deploying'], { status: 'failed', finishedAt: nowIso(), error: message });
    if (failed) {
      log('stderr', `[berth] failed: ${message}`);
      deploymentSettled(ctx, orgId, id);
    }
    if (!(e instanceof BuildError)) ctx.log.warn({ deploymentId: id, err: message }, 'deployment failed');
  } finally {
    clearInterval(watch);
    jobSignal.removeEventListener('abort', onJobAbort);
    rt.building.delete(id);
  }
}

/**
 * A preview environment's release becomes ready (contract section 16): served at the environment's
 * own host from the next request on, its app asleep until then (no start, no health check). When
 * the preview's app is awake (it served a request lately), the new release is started beside it and
 * takes over once healthy, as production's does (a release that does not start fails the deployment
 * and the running one keeps serving). A preview app that failed or crashed is reset: its next request
 * starts the new release.
 */
async function releasePreview(ctx: AppContext, d: store.DeploymentRow, enabled: boolean, log: (stream: 'stdout' | 'stderr', line: string) => void): Promise<boolean> {
  const rt = runtimeOf(ctx);
  const app = appKeyOf(d.projectId, d.environment);
  const state = rt.supervisor.stateOf(app);
  const awake = enabled && (state === 'running' || state === 'starting');
  const ok = await rt.releaseSwap(d.projectId, async () => {
    if (awake) {
      const rel = await store.releaseOf(ctx.db, d.orgId, d.id);
      const spec = rel ? await rt.releases.specOf(d.orgId, d.projectId, rel, (line) => log('stdout', `[berth] ${line}`)) : null;
      if (spec) {
        log('stdout', `[berth] the app of ${d.environment} is awake: starting the new release and waiting for its health check`);
        try {
          await rt.supervisor.deploy(spec, { step: `start: ${rel?.startCommand ?? "the image's own command"}`, log: (line) => log('stdout', line) });
        } catch (e) {
          throw new BuildError(`the new release did not start: ${(e as Error).message}; the previous release keeps serving`);
        }
      }
    }
    if (!(await store.markReady(ctx.db, d, ['deploying']))) {
      // Cancelled or superseded while it started: the release that should serve goes back.
      if (awake) {
        const back = await rt.releases.specFor(d.orgId, d.projectId, d.environment);
        if (back) await rt.supervisor.deploy(back).catch(() => {});
        else await rt.supervisor.stop(app, 'sleeping');
      }
      return false;
    }
    if (!awake) {
      await rt.supervisor.stop(app, 'sleeping');
      // Several instances: one that runs the preview's previous release stops it (the next request starts this one).
      await rt.evict(app);
    }
    return true;
  });
  if (!ok) return false;
  rt.invalidate(d.projectId);
  const project = await projectQueries.findProject(ctx.db, d.orgId, d.projectId);
  const env = project ? await projectQueries.findEnvironment(ctx.db, d.orgId, d.projectId, d.environment) : undefined;
  const url = project && env ? environmentUrl(ctx, project, env) : null;
  if (!enabled) log('stdout', `[berth] ready; the project is disabled, so ${d.environment} is served once it is enabled`);
  else if (awake) log('stdout', `[berth] ready: the new release is serving${url ? ` at ${url}` : ''}`);
  else log('stdout', `[berth] ready: ${d.environment} is served${url ? ` at ${url}` : ''}; its app starts on its first request`);
  deploymentSettled(ctx, d.orgId, d.id);
  return true;
}

/**
 * A static release: the built output is copied into a folder the server owns (links and special
 * files dropped, compressible files precompressed), the build's source and dependencies are removed,
 * and the deployment is ready at once (no process, no health check). A production release stops the
 * app a previous server release ran; the edge serves the files from the next request on.
 */
async function releaseStaticSite(
  ctx: AppContext,
  orgId: string,
  project: ProjectRow,
  id: string,
  environment: string,
  commit: string | null,
  site: { dir: string; spa: boolean; prepared?: string },
  log: (stream: 'stdout' | 'stderr', line: string) => void,
): Promise<boolean> {
  const rt = runtimeOf(ctx);
  const work = buildDir(ctx, project.id, id);
  const root = path.join(work, 'static');
  // A reused output (build-output.ts): the last ready build's published folder, linked (nothing writes into it).
  const copied = site.prepared
    ? await linkTree(site.prepared, root).then(() => null)
    : await prepareStaticSite(site.dir, root, { within: path.join(work, 'src') }).catch((e: Error) => {
        throw new BuildError(`the static site cannot be published: ${e.message}`);
      });
  await rm(path.join(work, 'src'), { recursive: true, force: true });
  await rm(path.join(work, 'home'), { recursive: true, force: true });
  log('stdout', copied ? `[berth] static site: ${copied.files} files, ${copied.bytes} bytes` : '[berth] static site: the last ready build\'s, unchanged');
  await store.updateBuild(ctx.db, orgId, id, { releaseDir: root, startCommand: null, staticSite: JSON.stringify({ spa: site.spa }) });
  if (!(await store.transition(ctx.db, orgId, id, ['building'], { status: 'deploying', commit }))) return false;
  const ready = await rt.releaseSwap(project.id, async () => {
    if (!(await store.markReady(ctx.db, { orgId, id, projectId: project.id, environment }, ['deploying']))) return false;
    // The edge serves the files from the next request on (its routes read the pointer), then the app a server release ran stops.
    rt.invalidate(project.id);
    await rt.supervisor.stop(appKeyOf(project.id, environment)).catch(() => {});
    // Several instances: one that runs the app of a previous (server) release stops it too.
    await rt.evict(appKeyOf(project.id, environment));
    return true;
  });
  if (!ready) return false;
  log('stdout', '[berth] ready: the edge serves the static site');
  deploymentSettled(ctx, orgId, id);
  await rt.releaseSwap(project.id, () => rt.releases.pruneReleases(orgId, project.id)).catch(() => {});
  return true;
}
