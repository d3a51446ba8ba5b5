/**
 * The plan a build runs: detection of the app folder of a fetched source (the source root itself,
 * or the project's root directory inside it, whose workspace root is the source root).
 */
import path from 'node:path';
import type { TenantFileProblem } from '../../lib/tenant-file.js';
import { detectFolder } from './detect.js';
import { Facts } from './facts.js';
import type { Detection } from './plan.js';

/**
 * `onIgnored` hears once about each file detection found but did not read (a link, a FIFO, a device,
 * a file over 1 MiB: contract section 18), for the build log.
 */
export function planBuild(sourceDir: string, appDir: string, onIgnored?: (rel: string, problem: TenantFileProblem) => void): Detection {
  const told = new Set<string>();
  const tell = onIgnored
    ? (rel: string, problem: TenantFileProblem) => {
        if (told.has(rel)) return;
        told.add(rel);
        onIgnored(rel, problem);
      }
    : undefined;
  const rel = path.relative(sourceDir, appDir);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return detectFolder(new Facts(appDir, '', null, tell));
  const top = new Facts(sourceDir, '', null, tell);
  return detectFolder(new Facts(sourceDir, rel.split(path.sep).join('/'), top, tell));
}
