import { mkdirSync, statSync } from 'node:fs';
import { toolchainEnv } from './toolchains.js';
import { chownTree } from './identity.js';
import { prepareVolume, volumeNotLimited } from './disk-limits.js';
import type { CommandStep } from './command.js';
import type { Box, RuntimeDriver } from './driver.js';
import type { LogStore } from './logs.js';
import { waitHealthy } from './app-health.js';
import { pipeAppOutput } from './app-output.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from './release-spec.js';
import { span, timed } from '../lib/spans.js';
import { withCaOptions } from './host-ca.js';

/** One running process group of a release, in its own box. */
export interface Instance {
  spec: ReleaseSpec;
  /** What stops it: a box, or a container / service (the docker driver). */
  box: Pick<Box, 'signalAll' | 'dispose' | 'usage'>;
  upstream: Upstream;
  /** The main process on the host (none for a Swarm service). */
  pid?: number;
  startedAt: string;
  stopping: boolean;
  exited: Promise<{ code: number | null; signal: string | null }>;
  /** Lets go of it without stopping it (apps that survive a server shutdown, AppRunner.survivesShutdown). */
  detach?(): void;
}

export interface InstanceDeps {
  logs: LogStore;
  driver: RuntimeDriver;
  /** Base environment every app gets (PATH, LANG, ...); never the server's own environment. */
  baseEnv: Record<string, string>;
  healthTimeoutMs?: number;
  graceMs?: number;
  /** A fresh, unique name for the instance's box (asked once the box is about to open), from the app's key (`appOf`). */
  boxName(app: string): string;
}

/** The app's volume made ready (on its image when disk limits hold, owned by the project) and its box opened. */
async function openAppBox(spec: ReleaseSpec, deps: InstanceDeps, note: (line: string) => void): Promise<Box> {
  // The volume on its size-limited image (diskMb), when disk limits are enforced (disk-limits.ts).
  await timed('app.volume', () => prepareVolume(spec.dataDir, spec.diskMb, spec.identity).catch((e: Error) => note(volumeNotLimited(e))));
  mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
  // The volume belongs to the project's own user (a restore or an older Berth may have left root's files).
  if (spec.identity && statSync(spec.dataDir).uid !== spec.identity.uid) await chownTree(spec.dataDir, spec.identity);
  try {
    return await timed('app.open', () => deps.driver.open({
      kind: 'app',
      projectId: spec.projectId,
      name: deps.boxName(appOf(spec)),
      identity: spec.identity,
      limits: spec.limits,
      appDir: spec.appRoot,
      dataDir: spec.dataDir,
      port: spec.port,
    }));
  } catch (e) {
    note(`the app cannot start: ${(e as Error).message}`);
    throw new StartError(`the app cannot start: ${(e as Error).message}`);
  }
}

/** The app's environment in its box: the base, the toolchains, the project's variables, then what Berth sets. */
function appEnv(spec: ReleaseSpec, deps: InstanceDeps, box: Box, port: number): Record<string, string> {
  const cwd = box.inside(spec.cwd);
  return withCaOptions({
    ...deps.baseEnv,
    ...toolchainEnv(box.inside(spec.appRoot)),
    PATH: spec.path(cwd, box.inside(spec.appRoot)),
    HOME: box.paths.home ?? box.paths.tmp,
    HOST: box.bindHost,
    NODE_ENV: 'production',
    ...spec.env,
    PORT: String(port),
    DATA_DIR: box.paths.data ?? spec.dataDir,
    BERTH_PROJECT_ID: spec.projectId,
    BERTH_DEPLOYMENT_ID: spec.deploymentId,
  }, deps.baseEnv);
}

/**
 * Opens a box for `spec`, runs its start steps (all but the last to completion), starts the last one
 * and waits until it answers its health check. Throws `StartError` (and leaves nothing running) when
 * any of that fails; every failure is also noted in the app's runtime log.
 */
export async function startInstance(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance> {
  const logFile = deps.logs.runtime(appOf(spec));
  const note = (line: string) => logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${line}` });
  const whole = span('app.start');
  const box = await openAppBox(spec, deps, note);
  const port = box.port!;
  const env = appEnv(spec, deps, box, port);
  const fail = async (message: string): Promise<never> => {
    await box.dispose().catch(() => {});
    note(message);
    throw new StartError(message);
  };
  let steps: CommandStep[] = [];
  try {
    steps = spec.steps(env);
  } catch (e) {
    await fail(`the start command cannot run: ${(e as Error).message}`);
  }
  // Steps before the last one (migrations, ...) run to completion first, in the same box.
  for (const step of steps.slice(0, -1)) {
    const p = box.exec(step.argv, { cwd: spec.cwd, env: { ...env, ...step.env } });
    pipeAppOutput(p, logFile, spec.secrets);
    const r = await p.exited;
    if (r.code !== 0) await fail(`start step "${step.argv[0]}" ${r.error ? `could not run: ${r.error.message}` : `exited with code ${r.code}`}`);
  }
  const last = steps[steps.length - 1]!;
  const spawned = span('app.exec-to-healthy');
  const proc = box.exec(last.argv, { cwd: spec.cwd, env: { ...env, ...last.env } });
  const exited = proc.exited.then(({ code, signal, error }) => {
    if (error && proc.pid) note(`the app could not start: ${error.message}`);
    return { code, signal };
  });
  if (!proc.pid) {
    await exited;
    await fail(`could not start "${last.argv[0]}": program not found`);
  }
  pipeAppOutput(proc, logFile, spec.secrets);
  const upstream: Upstream = { host: box.host, port, key: `${box.host}:${port}` };
  const inst: Instance = { spec, box, upstream, pid: proc.pid!, startedAt: new Date().toISOString(), stopping: false, exited };
  // Whatever the app left when it exited (children, detached ones) goes with it.
  void exited.then(() => {
    if (!inst.stopping) void box.dispose().catch(() => {});
  });
  note(`starting ${spec.deploymentId} on ${box.host === '127.0.0.1' ? 'port' : `${box.host} port`} ${port} (pid ${proc.pid})`);
  const healthy = await waitHealthy(inst.upstream, inst.exited, deps.healthTimeoutMs ?? 30000);
  spawned();
  whole();
  if (!healthy.ok) {
    await stopInstance(inst, deps.graceMs);
    note(`the app did not become healthy: ${healthy.reason}`);
    throw new StartError(`the app did not become healthy: ${healthy.reason}`);
  }
  return inst;
}

/** SIGTERM to the app's processes, SIGKILL to the whole box after the grace period; the box is freed. */
export async function stopInstance(inst: Instance, graceMs = 5000): Promise<void> {
  inst.stopping = true;
  // No process of its own (a Swarm service): its dispose stops it, with the grace the service was given.
  if (inst.pid === undefined && inst.spec.image) return inst.box.dispose();
  inst.box.signalAll('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([inst.exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
  if (timer) clearTimeout(timer);
  await inst.box.dispose();
}
