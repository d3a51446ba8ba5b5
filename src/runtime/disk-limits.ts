import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { volumeUsage as walkedUsage, type DiskUsage } from './disk-usage.js';
import { ensureImage, imageOf, imagesUsable, isMounted, removeImage, unmountBelow, usage, type DiskLimitMode } from './disk-image.js';

/**
 * How this server limits disk (contract 18, docs/runtime.md "Disk limits"): volumes (`/data`, a
 * preview's own) and a build's folders each on a size-limited ext4 image (disk-image.ts), when
 * `BERTH_DISK_LIMITS` allows it and the host can (root, loop devices). Decided once at start
 * (`startDiskLimits`) by each server, which keeps the answer (the hosting area's releases): volumes and
 * builds are given a limit only when it is enforced, and `info.runtime.disk` is told it.
 *
 * Project quotas (ext4/XFS `prjquota`) are the other way the contract names; no kernel Berth is tested
 * on has quota support, so they are not built (docs/decisions.md "Disk limits by filesystem image").
 */

export interface DiskLimitsState {
  mode: DiskLimitMode;
  enforced: boolean;
  /** Why not, when not enforced. */
  reason?: string;
}

/** What a server answers before it decided. */
export const UNDECIDED: DiskLimitsState = { mode: 'off', enforced: false, reason: 'the server has not decided yet' };

/**
 * Decides at start: `off` never makes images; `auto` makes them when the host can; `images` fails the
 * start when it cannot. Images that exist are mounted again in every mode (their folders would show
 * an empty volume otherwise): every `<data-dir>/volumes/<project>/data.img` and
 * `.previews/<env>.img`.
 */
export async function startDiskLimits(dataDir: string, mode: DiskLimitMode, log: { warn(o: object, msg: string): void }, opts: { swarm?: boolean } = {}): Promise<DiskLimitsState> {
  const volumes = path.join(dataDir, 'volumes');
  let state: DiskLimitsState;
  if (mode === 'off') state = { mode, enforced: false, reason: 'BERTH_DISK_LIMITS=off: writes past diskMb are not refused' };
  else if (opts.swarm) {
    // Swarm tasks and build jobs on other machines reach volumes and build folders through the shared
    // data dir: a loop mount on this machine would hide them (they would see the folder under it),
    // and an ext4 image mounted on two machines at once corrupts. The storage server's quotas apply.
    if (mode === 'images') throw new Error("BERTH_DISK_LIMITS=images cannot hold under Docker Swarm (volumes are the shared data dir): use auto or off, and the storage server's quotas (docs/scale-out.md)");
    state = { mode, enforced: false, reason: "under Docker Swarm volumes and build folders are the shared data dir, reached from several machines, where a filesystem image cannot be mounted: limit them with the storage server's quotas (docs/scale-out.md)" };
  } else {
    const u = await imagesUsable(path.join(dataDir, 'tmp'));
    if (!u.ok && mode === 'images') throw new Error(`BERTH_DISK_LIMITS=images, but this host cannot mount filesystem images: ${u.reason}`);
    state = u.ok ? { mode, enforced: true } : { mode, enforced: false, reason: `filesystem images are not usable on this host (${u.reason}): writes past diskMb are not refused` };
  }
  await sweepBuildImages(path.join(dataDir, 'builds')).catch((e: Error) => log.warn({ err: e.message }, 'could not remove the images of builds a stop cut short'));
  for (const dir of await imageFolders(volumes)) {
    try {
      await ensureImage(dir, 0);
    } catch (e) {
      log.warn({ dir, err: (e as Error).message }, 'a volume image could not be mounted again');
    }
  }
  return state;
}

/** Folders under `<data-dir>/volumes` that have an image beside them (`<folder>.img`). */
async function imageFolders(volumes: string): Promise<string[]> {
  if (!existsSync(volumes)) return [];
  const out: string[] = [];
  const imagesIn = async (dir: string) => {
    for (const n of await readdir(dir).catch(() => [] as string[])) if (n.endsWith('.img')) out.push(path.join(dir, n.slice(0, -4)));
  };
  for (const project of await readdir(volumes)) {
    await imagesIn(path.join(volumes, project));
    await imagesIn(path.join(volumes, project, '.previews'));
  }
  return out;
}

/**
 * Before an app starts on `dir` (its volume): the folder is put on its image of `limitMb` (made,
 * migrated from a plain folder, grown); the release spec carries a limit only where the server
 * enforces limits. An existing image is mounted in any case. The owner given owns a new image's root.
 */
export async function prepareVolume(dir: string, limitMb: number | undefined, owner?: { uid: number; gid: number } | null): Promise<void> {
  if (isMounted(dir)) {
    if (limitMb) await ensureImage(dir, limitMb, owner ?? undefined);
    return;
  }
  if (existsSync(imageOf(dir))) await ensureImage(dir, limitMb ?? 0, owner ?? undefined);
  else if (limitMb) await ensureImage(dir, limitMb, owner ?? undefined);
}

/** The runtime-log line of a volume that could not be put on its image (it runs unlimited meanwhile). */
export function volumeNotLimited(e: Error): string {
  return `the volume stays without its disk limit for now: ${e.message}`;
}

/** `info.runtime.disk`: statfs of the image when the volume is on one, else the bounded walk (disk-usage.ts). */
export async function volumeDiskUsage(dir: string, limitMb: number, state: DiskLimitsState, fresh = false): Promise<DiskUsage> {
  if (isMounted(dir) && existsSync(imageOf(dir))) {
    const u = await usage(dir);
    const out: DiskUsage = { limitMb, usedMb: u.usedMb, enforced: true, sizeMb: u.sizeMb };
    if (u.sizeMb + 16 < limitMb * 0.9) out.note = `the volume's image is ${u.sizeMb} MB until the app restarts (then it grows to diskMb)`;
    else if (u.sizeMb > limitMb * 1.05) out.note = `the volume's image stays at ${u.sizeMb} MB: an image never shrinks (docs/runtime.md "Disk limits")`;
    return out;
  }
  const walked = await walkedUsage(dir, limitMb, fresh);
  if (state.enforced) return { ...walked, enforced: false, note: 'the volume moves onto its size-limited image when the app next starts' };
  return { ...walked, enforced: false, note: `diskMb is not enforced: ${state.reason ?? 'unknown'} (docs/runtime.md "Disk limits")` };
}

/** A volume (or a project's whole volumes folder) going away: its images unmounted and removed first. */
export async function releaseVolumes(dir: string): Promise<void> {
  await unmountBelow(dir);
  if (existsSync(imageOf(dir))) await removeImage(dir);
}

/**
 * Start-up sweep of a stop's leftovers under `<data-dir>/builds`: images of builds that were cut short
 * (no build of this server runs yet; one still mounted is unmounted) and half-copied releases and kept-install snapshots.
 */
async function sweepBuildImages(buildsDir: string): Promise<void> {
  if (!existsSync(buildsDir)) return;
  for (const project of await readdir(buildsDir).catch(() => [] as string[])) {
    const dir = path.join(buildsDir, project);
    for (const n of await readdir(dir).catch(() => [] as string[])) {
      // A build's kept install mounted below its folder (build-overlay.ts) goes first; its snapshot (`.lower`) with the releases.
      if (n.endsWith('.img')) await unmountBelow(path.join(dir, n.slice(0, -4))).then(() => removeImage(path.join(dir, n.slice(0, -4)))).catch(() => {});
      else if (n.endsWith('.release') || n.endsWith('.lower')) await rm(path.join(dir, n), { recursive: true, force: true }).catch(() => {});
    }
  }
}
