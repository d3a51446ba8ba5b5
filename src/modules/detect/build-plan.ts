/**
 * The plan a build runs: detection of the app folder of a fetched source (the source root itself,
 * or the project's root directory inside it, whose workspace root is the source root).
 */
import path from 'node:path';
import { detectFolder } from './detect.js';
import { Facts } from './facts.js';
import type { Detection } from './plan.js';

export function planBuild(sourceDir: string, appDir: string): Detection {
  const rel = path.relative(sourceDir, appDir);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return detectFolder(new Facts(appDir, '', null));
  const top = new Facts(sourceDir, '', null);
  return detectFolder(new Facts(sourceDir, rel.split(path.sep).join('/'), top));
}
