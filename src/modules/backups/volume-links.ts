import { lstat, lchown, lutimes, symlink, utimes } from 'node:fs/promises';
import path from 'node:path';

/** A symbolic link of a volume artifact, made after everything else was extracted (`DeferredLinks`). */
interface Link {
  /** The entry's path inside the folder, normalised (no `.`, no leading `./`); null when it has none there (`bad`). */
  rel: string | null;
  bad?: string;
  /** Its target, exactly as archived. */
  target: string;
  uid: number | null;
  gid: number | null;
  mtime: Date | null;
}

/**
 * A volume's symbolic links, restored as they were archived. tar's unpacker (node-tar 7.5.23+) strips
 * the `/` of an absolute link target and refuses one that leads out of the folder with `..`: right
 * for an untrusted tarball, wrong for a volume, whose links are the app's own and resolve in the app's
 * view of the filesystem (`/data/current -> /data/releases/5`, `shared -> ../shared`); with `strict`
 * such a volume could be backed up but not restored. So the unpacker skips symbolic links (`filter`),
 * this keeps them, and `create` makes them once every other entry is written: no entry can be written
 * through one of them, and a link whose folder is not a real folder of the extraction (one beneath
 * another link, which `tar c` of a real folder never makes) fails the restore. Owners (as root, as the
 * unpacker does) and times are kept, and each link's folder keeps the time the unpacker gave it.
 */
export class DeferredLinks {
  private readonly links: Link[] = [];

  constructor(private readonly dir: string) {}

  /** The unpacker's `filter`: false (and kept here) for a symbolic link, true for anything else. */
  readonly filter = (_path: string, entry: unknown): boolean => {
    const e = entry as { type?: string; path?: string; linkpath?: string; uid?: number; gid?: number; mtime?: Date };
    if (e.type !== 'SymbolicLink') return true;
    const raw = String(e.path ?? '');
    const rel = entryPath(raw);
    this.links.push({ rel, ...(rel ? {} : { bad: raw }), target: String(e.linkpath ?? ''), uid: e.uid ?? null, gid: e.gid ?? null, mtime: e.mtime ?? null });
    return false;
  };

  async create(): Promise<void> {
    const asRoot = process.getuid?.() === 0;
    for (const l of this.links) {
      if (l.rel === null) throw new Error(`the artifact has a symbolic link outside its folder (${l.bad})`);
      if (!l.target) throw new Error(`the symbolic link ${l.rel} in the artifact has no target`);
      const at = path.join(this.dir, l.rel);
      const parent = path.dirname(at);
      await this.assertRealFolders(l.rel);
      const before = await lstat(parent);
      await symlink(l.target, at);
      if (asRoot && l.uid !== null && l.gid !== null) await lchown(at, l.uid, l.gid);
      if (l.mtime) await lutimes(at, l.mtime, l.mtime);
      await utimes(parent, before.atime, before.mtime);
    }
  }

  /** Every folder above `rel` inside the extraction is a real folder (not a link), or the restore fails. */
  private async assertRealFolders(rel: string): Promise<void> {
    const parts = rel.split('/').slice(0, -1);
    let at = this.dir;
    for (const p of parts) {
      at = path.join(at, p);
      const st = await lstat(at).catch(() => null);
      if (!st?.isDirectory()) throw new Error(`the artifact's symbolic link ${rel} is not inside a folder of the volume`);
    }
  }
}

/** A tar entry's path as a path inside the folder (`./` and `.` parts dropped), or null: absolute, `..`, or none. */
function entryPath(raw: string): string | null {
  if (raw.startsWith('/')) return null;
  const parts = raw.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.includes('..')) return null;
  return parts.join('/');
}
