import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The source tree the structure tests read. */
export const SRC = path.resolve(import.meta.dirname, '../../src');

/** Every `.ts` file under `dir`, recursively. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}
