import { lstatSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * The stable path an image build's context is given to the docker CLI through (docs/builds.md "Under the
 * docker runtime"). BuildKit keeps the last context it received per session key (the CLI's: a hash of its
 * node id, `.buildNodeID` in its config folder, which the builder keeps the same, and the context's path)
 * and, given the same key again, receives only the files whose name, size, mode, owner or time (to the
 * nanosecond) changed. A build's folder is new for each deployment, so each build sent its whole context (a
 * Next.js release: 316 MB of `node_modules`, 10-17 s) even when the layer was then `CACHED`. Through a link
 * at one path per project environment, an unchanged `node_modules` (the kept install's files, times kept)
 * is compared, not sent.
 *
 * The link lives where no build can write (beside the builds' folders, in the data dir: only the server
 * enters it) and points at the real context; one build at a time uses a link (`inUse`: the builder's own
 * set): a second build of the same environment meanwhile gives the CLI its real folder, as before.
 */
export function acquireContextAlias(alias: string | undefined, contextDir: string, inUse: Set<string>): { path: string; release(): void } {
  const real = path.resolve(contextDir);
  if (!alias || inUse.has(alias)) return { path: real, release: () => {} };
  const tmp = `${alias}.${process.pid}.tmp`;
  try {
    // Only a link (or nothing) is ever replaced at the alias: a folder there is left alone.
    const st = lstatSync(alias, { throwIfNoEntry: false });
    if (st && !st.isSymbolicLink()) return { path: real, release: () => {} };
    rmSync(tmp, { force: true });
    symlinkSync(real, tmp);
    renameSync(tmp, alias);
  } catch {
    rmSync(tmp, { force: true });
    return { path: real, release: () => {} };
  }
  inUse.add(alias);
  return {
    path: alias,
    release: () => {
      inUse.delete(alias);
      rmSync(alias, { force: true });
    },
  };
}
