import { UNDECIDED, type DiskLimitsState } from '../../runtime/disk-limits.js';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { pathWithBin, startScript, stepsOf } from '../../runtime/build.js';
import { DEFAULT_PIDS_MAX, type Limits } from '../../runtime/cgroups.js';
import type { Identity, RuntimeDriver } from '../../runtime/driver.js';
import { caEnv } from '../../runtime/host-ca.js';
import { uidBase } from '../../runtime/identity.js';
import { appKeyOf } from '../../runtime/app-key.js';
import type { ReleaseSpec, Supervisor } from '../../runtime/supervisor.js';
import { hostReads } from '../projects/index.js';
import { envForRun } from './run-env.js';
import * as store from '../deployments/index.js';

export function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** What every app and build starts from: never the server's own environment (it holds its secrets). */
export function baseEnv(): Record<string, string> {
  const e: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: process.env.LANG ?? 'C.UTF-8' };
  if (process.env.TZ) e.TZ = process.env.TZ;
  return { ...e, ...caEnv() };
}

/**
 * Releases on disk and what they run with: the spec a release starts from (its folder, start command,
 * the project's env, limits, uid and volume), and pruning of old release folders.
 */
export class Releases {
  /** How this server limits disk, decided when the host starts (disk-limits.ts). */
  diskLimits: DiskLimitsState = UNDECIDED;

  constructor(
    private readonly ctx: AppContext,
    private readonly driver: RuntimeDriver,
    private readonly supervisor: Supervisor,
  ) {}

  /** The spec of the environment's current release (production's by default), or null when it has none (or it is a static site). */
  async specFor(orgId: string, projectId: string, environment = 'production'): Promise<ReleaseSpec | null> {
    const rel = await store.currentRelease(this.ctx.db, orgId, projectId, environment);
    return rel ? this.specOf(orgId, projectId, rel) : null;
  }

  /**
   * The spec a release of the project runs with, in its own environment (that environment's env over
   * its plan's variables; a preview's own app and volume), or null when it runs no process.
   */
  async specOf(orgId: string, projectId: string, rel: store.ReleaseRow, note?: (line: string) => void): Promise<ReleaseSpec | null> {
    if (!rel.releaseDir || (!rel.startCommand && !rel.image)) return null;
    const project = await hostReads.projectRunSettings(this.ctx.db, orgId, projectId);
    if (!project) return null;
    const { env, secrets } = await envForRun(this.ctx, orgId, projectId, rel.environment);
    return this.releaseSpec(
      orgId,
      projectId,
      rel.id,
      rel.releaseDir,
      rel.startCommand,
      project,
      { ...planVariables(rel.planVariables), ...env },
      secrets,
      { image: rel.image, imageCommand: rel.imageCommand === 1 },
      rel.environment,
      note,
    );
  }

  /** Whether a release's folder is still on disk (pruned releases cannot serve again). */
  isKept(rel: store.ReleaseRow): boolean {
    return !!rel.releaseDir && existsSync(rel.releaseDir) && (!!rel.staticSite || !!rel.startCommand || !!rel.image);
  }

  /**
   * The spec of one release (its folder and start command) with the project's env and limits, run as
   * `environment`'s app: production's (the project's volume, its replicas), or a preview's (its own
   * app key and volume, one replica). A package manager's start reads the release's package.json here,
   * once and asynchronously, as a tenant's file (never through a link, never blocking on a FIFO or a
   * device, at most 1 MiB); one that is ignored is told to `note` (the build log), else to the server log.
   */
  async releaseSpec(
    orgId: string,
    projectId: string,
    deploymentId: string,
    appDir: string,
    command: string | null,
    project: { resources: string; port: number },
    env: Record<string, string>,
    secrets: string[],
    image: { image: string | null; imageCommand: boolean } = { image: null, imageCommand: false },
    environment = 'production',
    note?: (line: string) => void,
  ): Promise<ReleaseSpec> {
    const base = baseEnv();
    const preview = environment !== 'production';
    const appRoot = this.releaseRootOf(appDir);
    const told = note ?? ((line: string) => this.ctx.log.warn({ projectId, deploymentId }, line));
    const script = command ? await this.startScriptOf(appDir, command, told, appRoot) : null;
    return {
      projectId,
      ...(preview ? { app: appKeyOf(projectId, environment) } : {}),
      orgId,
      deploymentId,
      appRoot,
      cwd: appDir,
      steps: (finalEnv) => (command ? stepsOf(command, script, finalEnv) : []),
      ...(image.image ? { image: image.image, imageCommand: image.imageCommand || !command, replicas: preview ? 1 : replicasOf(project.resources) } : {}),
      env,
      secrets,
      dataDir: preview ? this.previewVolumeDir(projectId, environment) : this.volumeDir(projectId),
      diskMb: this.diskLimits.enforced ? this.diskMbOf(project.resources, 'production') : undefined,
      limits: this.limitsOf(project.resources, 'production'),
      identity: await this.identityOf(orgId, projectId),
      port: Number(project.port) > 0 ? Number(project.port) : 3000,
      path: (cwdInside, rootInside) => env.PATH ?? pathWithBin(cwdInside, this.visiblePath(base.PATH), rootInside),
    };
  }

  /**
   * A release's start script (`startScript`), read once per release folder and command: a release
   * does not change once built (its folder is read-only in every box), and a wake then reads no file.
   */
  private async startScriptOf(appDir: string, command: string, note: (line: string) => void, appRoot: string): Promise<string | null> {
    const key = `${appDir}\0${command}`;
    const known = this.scripts.get(key);
    if (known !== undefined) return known;
    const script = await startScript(appDir, command, note, appRoot);
    if (this.scripts.size >= 256) this.scripts.clear();
    this.scripts.set(key, script);
    return script;
  }

  private readonly scripts = new Map<string, string | null>();

  /** The PATH folders the driver's boxes can see (the sandbox shows the system folders, not /root). */
  visiblePath(pathVar: string | undefined): string {
    return (pathVar ?? '').split(path.delimiter).filter((d) => d && (this.driver.sees?.(d) ?? true)).join(path.delimiter);
  }

  /**
   * The folder a release is shown at `/app` from: `<builds>/<projectId>/<deploymentId>/src`, whatever
   * root directory below it the app runs in.
   */
  releaseRootOf(releaseDir: string): string {
    const base = path.join(this.ctx.config.dataDir, 'builds');
    const rel = path.relative(base, path.resolve(releaseDir)).split(path.sep);
    if (rel.length >= 3 && rel[0] !== '..' && rel[2] === 'src') return path.join(base, rel[0]!, rel[1]!, 'src');
    return releaseDir;
  }

  /**
   * The project's own uid/gid when the driver switches users (sandbox as root), allocated on first
   * use (the supervisor hands the volume to it, the build the source).
   */
  async identityOf(orgId: string, projectId: string): Promise<Identity | null> {
    if (this.driver.isolation === 'none' || process.getuid?.() !== 0) return null;
    const uid = await store.sandboxUid(this.ctx.db, orgId, projectId, uidBase(this.ctx.uidRange), nowIso());
    return { uid, gid: uid };
  }

  volumeDir(projectId: string): string {
    return path.join(this.ctx.config.dataDir, 'volumes', path.basename(projectId), 'data');
  }

  /**
   * A preview environment's own volume (`DATA_DIR`), empty when it is made and never production's:
   * `<data-dir>/volumes/<projectId>/.previews/<environment>` (no volume service, no backups; removed
   * with the environment, and with the project).
   */
  previewVolumeDir(projectId: string, environment: string): string {
    return path.join(this.ctx.config.dataDir, 'volumes', path.basename(projectId), '.previews', path.basename(environment));
  }

  /** The disk limit of the project's volume (`production.diskMb`, default 1024) or of a build's folders (`build.diskMb`, default 4096). */
  diskMbOf(resources: string, which: 'production' | 'build'): number {
    const def = which === 'production' ? 1024 : 4096;
    try {
      const n = Number(JSON.parse(resources)?.[which]?.diskMb);
      return n > 0 ? n : def;
    } catch {
      return def;
    }
  }

  limitsOf(resources: string, which: 'production' | 'build'): Limits {
    const pidsMax = envNumber('BERTH_PIDS_MAX', DEFAULT_PIDS_MAX);
    const def = which === 'production' ? { cpuCores: 1, memoryMb: 512, pidsMax } : { cpuCores: 2, memoryMb: 2048, pidsMax };
    try {
      const r = JSON.parse(resources)?.[which] ?? {};
      return {
        cpuCores: Number(r.cpuCores) > 0 ? Number(r.cpuCores) : def.cpuCores,
        memoryMb: Number(r.memoryMb) > 0 ? Number(r.memoryMb) : def.memoryMb,
        pidsMax: Number(r.pidsMax) > 0 ? Number(r.pidsMax) : def.pidsMax,
      };
    } catch {
      return def;
    }
  }

  /**
   * Drops release folders of a project but those kept for rollback: the newest `keep`
   * (BERTH_RELEASES_KEPT) ready ones of each environment, each environment's current one, and the
   * ones its apps run (production's and its previews'). A folder (or image) a kept deployment also
   * runs stays: a production deployment promoted from a preview runs that preview deployment's build.
   */
  async pruneReleases(orgId: string, projectId: string, keep = this.ctx.config.releasesKept): Promise<void> {
    const keepIds = await store.keptReleaseIds(this.ctx.db, orgId, projectId, keep);
    for (const app of new Set([projectId, ...this.supervisor.appsOf(projectId)])) {
      const running = this.supervisor.snapshot(app)?.deploymentId;
      if (running) keepIds.push(running);
    }
    const base = path.join(this.ctx.config.dataDir, 'builds');
    const kept = await store.keptReleases(this.ctx.db, orgId, projectId, keepIds);
    const keptDirs = new Set(kept.flatMap((k) => (k.releaseDir ? [path.resolve(k.releaseDir)] : [])));
    const keptImages = new Set(kept.flatMap((k) => (k.image ? [k.image] : [])));
    for (const r of await store.oldReleaseDirs(this.ctx.db, orgId, projectId, keepIds)) {
      const dir = path.resolve(r.releaseDir);
      if (!dir.startsWith(base + path.sep)) continue;
      // releaseDir is <builds>/<projectId>/<deploymentId>/src[/root]: remove the deployment's folder.
      const rel = path.relative(base, dir).split(path.sep);
      if (rel.length < 2) continue;
      const folder = path.join(base, rel[0]!, rel[1]!);
      if (![...keptDirs].some((k) => k === folder || k.startsWith(folder + path.sep))) rmSync(folder, { recursive: true, force: true });
      if (r.image && !keptImages.has(r.image)) await this.driver.images?.remove([r.image]).catch(() => {});
      await store.updateBuild(this.ctx.db, orgId, r.deploymentId, { releaseDir: null });
    }
  }
}

/** `resources.production.replicas` (Swarm services), default 1. */
function replicasOf(resources: string): number {
  try {
    const n = Number(JSON.parse(resources)?.production?.replicas);
    return Number.isInteger(n) && n >= 1 ? Math.min(n, 100) : 1;
  } catch {
    return 1;
  }
}

/** The variables a release's plan set (stored as JSON with the build), or none. */
function planVariables(json: string | null): Record<string, string> {
  if (!json) return {};
  try {
    const v = JSON.parse(json) as unknown;
    return v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).filter(([, x]) => typeof x === 'string')) as Record<string, string> : {};
  } catch {
    return {};
  }
}
