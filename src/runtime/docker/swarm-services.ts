import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { CommandStep } from '../command.js';
import type { LogFile } from '../logs.js';
import { redactText } from '../redact.js';
import type { ReleaseSpec, StartError } from '../release-spec.js';
import { statusOf } from './containers.js';
import { demuxLogs } from './engine.js';
import type { SwarmTask } from './swarm-tasks.js';
import { appLabels, imageName, jobSpec, swarmLabels, UPDATE_MONITOR_NS } from './swarm-spec.js';

/**
 * What Berth asks of the Swarm manager about one service, each call bounded: read it and its tasks,
 * wait for a rollout or a rollback, push a release image to the registry, run a start step as a job,
 * make an app's overlay network and remove a service. No decisions about releases: swarm.ts makes
 * those (adopt, create or update; the balancer; the health check).
 */

const POLL_MS = 250;
const PUSH_TIMEOUT_MS = 15 * 60_000;
/** How long removing a service waits for its tasks to be gone (beyond the grace period). */
const REMOVE_WAIT_MS = 10_000;
const FAILED_STATES = new Set(['failed', 'rejected']);
const ROLLED_BACK = new Set(['rollback_started', 'rollback_completed', 'rollback_paused', 'paused']);

export type Service = Docker.Service & { Spec: Docker.ServiceSpec };
export type Outcome = { ok: true } | { ok: false; reason: string };

/** What a start step's job runs in: the release's task container, limits, network and placement. */
export interface JobContext {
  container: (env: Record<string, string>, command: string[] | undefined, kind: 'app' | 'step') => Docker.ContainerSpec;
  resources: Docker.ResourceRequirements;
  network: string;
  placement?: Docker.Placement;
  spec: ReleaseSpec;
  logFile: LogFile;
  deadline: number;
}

export class SwarmServices {
  constructor(
    private readonly api: Docker,
    private readonly key: string,
    /** BERTH_REGISTRY without trailing slashes, or null. */
    readonly registry: string | null,
  ) {}

  async inspect(nameOrId: string): Promise<(Service & { PreviousSpec?: Docker.ServiceSpec }) | null> {
    try {
      return (await this.api.getService(nameOrId).inspect()) as Service & { PreviousSpec?: Docker.ServiceSpec };
    } catch (e) {
      if (statusOf(e) === 404) return null;
      throw e;
    }
  }

  async tasksOf(serviceId: string): Promise<SwarmTask[]> {
    try {
      return (await this.api.listTasks({ filters: { service: [serviceId] } })) as SwarmTask[];
    } catch (e) {
      if (statusOf(e) === 404) return [];
      throw e;
    }
  }

  /** Resolves (with the last exit code) once two tasks of `image` started after `since` have failed; never when aborted. */
  failingTasks(id: string, image: string, since: number, signal: AbortSignal): Promise<{ code: number | null; signal: string | null }> {
    return new Promise((resolve) => {
      const check = async () => {
        while (!signal.aborted) {
          const failed = (await this.tasksOf(id).catch(() => [])).filter(
            (t) => imageName(t.Spec?.ContainerSpec?.Image) === image && FAILED_STATES.has(t.Status?.State ?? '') && Date.parse(t.Status?.Timestamp ?? '') >= since * 1000,
          );
          if (failed.length >= 2) return resolve({ code: failed[0]!.Status?.ContainerStatus?.ExitCode ?? null, signal: null });
          await sleep(POLL_MS * 2);
        }
      };
      void check();
    });
  }

  /** Waits until the service runs `image` on `replicas` tasks (a new service) or its update completed. */
  async waitRollout(a: { id: string; image: string; replicas: number; update: boolean; prevStartedAt?: string | null; deadline: number }): Promise<Outcome> {
    const t0 = Date.now();
    let lastError = '';
    while (Date.now() < a.deadline) {
      const s = await this.inspect(a.id);
      if (!s) return { ok: false, reason: 'the service was removed' };
      const tasks = await this.tasksOf(a.id);
      const mine = tasks.filter((t) => imageName(t.Spec?.ContainerSpec?.Image) === a.image);
      lastError = taskError(mine) ?? lastError;
      const us = s.UpdateStatus;
      const fresh = us?.StartedAt && us.StartedAt !== a.prevStartedAt;
      if (a.update && fresh) {
        if (us.State === 'completed') return { ok: true };
        if (ROLLED_BACK.has(us.State ?? '')) return { ok: false, reason: lastError || us.Message || `the update ended ${us.State}` };
      }
      const live = tasks.filter((t) => t.DesiredState === 'running');
      const converged = live.length > 0 && live.every((t) => imageName(t.Spec?.ContainerSpec?.Image) === a.image) && live.filter((t) => t.Status?.State === 'running').length >= a.replicas;
      // A new service, or an update the engine found nothing to roll for.
      if (converged && (!a.update || (!fresh && Date.now() - t0 > UPDATE_MONITOR_NS / 1e6))) return { ok: true };
      if (!a.update) {
        const failed = mine.filter((t) => FAILED_STATES.has(t.Status?.State ?? ''));
        if (failed.some((t) => t.Status?.State === 'rejected') || failed.length >= 2) return { ok: false, reason: lastError || 'its tasks failed' };
      }
      await sleep(POLL_MS);
    }
    return { ok: false, reason: `it was not running within ${Math.round((a.deadline - t0) / 1000)} s${lastError ? ` (${lastError})` : ''}` };
  }

  /** Puts the service back on its previous spec (unless the engine did already) and waits for that, bounded. */
  async rollBack(id: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let s = await this.inspect(id);
    if (!s) return;
    const state = s.UpdateStatus?.State ?? '';
    if (!state.startsWith('rollback')) {
      if (!s.PreviousSpec) return;
      await this.api.getService(id).update({ _query: { version: s.Version?.Index, rollback: 'previous' }, _body: s.Spec } as unknown as object);
    }
    while (Date.now() < deadline) {
      s = await this.inspect(id);
      const st = s?.UpdateStatus?.State;
      if (!s || st === 'rollback_completed' || st === 'rollback_paused') return;
      await sleep(POLL_MS);
    }
  }

  /** Tags and pushes the image to the registry, following the engine's progress to the end. */
  async push(local: string, remote: string, note: (line: string) => void, fail: (message: string) => StartError): Promise<void> {
    const at = remote.lastIndexOf(':');
    const slash = remote.lastIndexOf('/');
    const [repo, tag] = at > slash ? [remote.slice(0, at), remote.slice(at + 1)] : [remote, 'latest'];
    note(`pushing ${local} to the registry ${this.registry}`);
    try {
      await this.api.getImage(local).tag({ repo, tag });
      // No credentials (the engine requires the header all the same): a registry every node reaches as it is.
      const stream = (await this.api.getImage(remote).push({ authconfig: {}, abortSignal: AbortSignal.timeout(PUSH_TIMEOUT_MS) })) as Readable;
      const error = await new Promise<string | null>((resolve) => {
        let err: string | null = null;
        this.api.modem.followProgress(
          stream,
          (e: Error | null) => resolve(err ?? (e ? e.message : null)),
          (ev: { error?: string; errorDetail?: { message?: string } }) => {
            if (ev.error || ev.errorDetail) err ??= ev.errorDetail?.message ?? ev.error ?? 'the push failed';
          },
        );
      });
      if (error) throw new Error(error);
      // The registry's name on this engine only pins the image (pruning removes the release's own tag): the nodes pull it.
      await this.api
        .getImage(remote)
        .remove({ noprune: true })
        .catch(() => {});
    } catch (e) {
      throw fail(`could not push ${local} to the registry ${this.registry}: ${(e as Error).message}`);
    }
  }

  /** Runs one start step to completion as a Swarm job; its output goes into the app's log. */
  async runJob(
    name: string,
    step: CommandStep,
    env: Record<string, string>,
    c: JobContext,
  ): Promise<Outcome> {
    const left = await this.inspect(name);
    if (left) await this.removeService(left.ID, 0);
    const label = `start step "${step.argv[0]}"`;
    const t0 = Date.now();
    let id: string;
    try {
      const spec = jobSpec({ name, labels: appLabels(this.key, c.spec, 'step'), container: c.container(env, step.argv, 'step'), resources: c.resources, network: c.network, placement: c.placement });
      id = ((await this.api.createService(spec as Docker.CreateServiceOptions)) as { id: string }).id;
    } catch (e) {
      return { ok: false, reason: `${label} could not run: ${(e as Error).message}` };
    }
    try {
      let done: SwarmTask | undefined;
      while (!done && Date.now() < c.deadline) {
        done = (await this.tasksOf(id)).find((t) => ['complete', 'failed', 'rejected', 'shutdown'].includes(t.Status?.State ?? ''));
        if (!done) await sleep(POLL_MS);
      }
      const logs = await this.api
        .getService(id)
        .logs({ stdout: true, stderr: true, follow: false })
        .then((b) => demuxLogs(b as unknown as Buffer))
        .catch(() => ({ stdout: '', stderr: '' }));
      for (const [stream, text] of [['stdout', logs.stdout], ['stderr', logs.stderr]] as const) {
        for (const line of redactText(text, c.spec.secrets).split('\n')) if (line) c.logFile.append({ ts: new Date().toISOString(), stream, line });
      }
      if (!done) return { ok: false, reason: `${label} did not finish within ${Math.round((c.deadline - t0) / 1000)} s` };
      if (done.Status?.State === 'complete') return { ok: true };
      const code = done.Status?.ContainerStatus?.ExitCode;
      return { ok: false, reason: code ? `${label} exited with code ${code}` : `${label} could not run: ${done.Status?.Err ?? done.Status?.State}` };
    } finally {
      await this.removeService(id, 0).catch(() => {});
    }
  }

  /** The project's overlay network (not attachable: only its services' tasks join it). */
  async ensureNetwork(name: string, projectId: string): Promise<void> {
    try {
      await this.api.getNetwork(name).inspect();
      return;
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    try {
      await this.api.createNetwork({ Name: name, Driver: 'overlay', Attachable: false, CheckDuplicate: true, Labels: swarmLabels(this.key, projectId, 'app') } as Docker.NetworkCreateOptions);
    } catch (e) {
      if (statusOf(e) !== 409) throw e;
    }
  }

  /** Removes an overlay network once its tasks' endpoints are gone (bounded). */
  async removeNetwork(network: string): Promise<void> {
    const deadline = Date.now() + REMOVE_WAIT_MS * 2;
    for (;;) {
      try {
        await this.api.getNetwork(network).remove();
        return;
      } catch (e) {
        if (statusOf(e) === 404) return;
        if (Date.now() > deadline) throw new Error(`could not remove the network ${network}: ${(e as Error).message}`);
        await sleep(POLL_MS * 2);
      }
    }
  }

  /** Removes a service and waits (bounded) until none of its tasks runs. */
  async removeService(id: string, graceMs: number): Promise<void> {
    try {
      await this.api.getService(id).remove();
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    const deadline = Date.now() + graceMs + REMOVE_WAIT_MS;
    const filters = { label: [`com.docker.swarm.service.id=${id}`] };
    while (Date.now() < deadline) {
      const tasks = ((await this.api.listTasks().catch(() => [])) as SwarmTask[]).filter((t) => t.ServiceID === id && t.Status?.State === 'running');
      const containers = await this.api.listContainers({ filters }).catch(() => []);
      if (!tasks.length && !containers.length) break;
      await sleep(POLL_MS);
    }
    // The engine (20.10) leaves the containers of a job's completed tasks behind: those on this node go.
    for (const c of await this.api.listContainers({ all: true, filters: { ...filters, status: ['exited', 'created', 'dead'] } }).catch(() => [])) {
      await this.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    }
  }
}

/** The image a service's tasks run. */
export function containerImage(s: Service): string | undefined {
  const t = s.Spec.TaskTemplate;
  return t && 'ContainerSpec' in t ? t.ContainerSpec?.Image : undefined;
}

/** The newest error a task of the release reported (`task: non-zero exit (1)`, a missing mount, ...). */
function taskError(tasks: SwarmTask[]): string | null {
  const failed = tasks
    .filter((t) => t.Status?.Err)
    .sort((a, b) => String(b.Status?.Timestamp ?? '').localeCompare(String(a.Status?.Timestamp ?? '')));
  return failed[0]?.Status?.Err ?? null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
