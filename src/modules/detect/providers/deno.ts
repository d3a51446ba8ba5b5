/**
 * The deno provider, after Railpack's (core/providers/deno): a folder with a `deno.json` or
 * `deno.jsonc` (a lone `main.ts` is not Deno to Railpack, nor here). Deno itself comes from the npm
 * registry at build time (`tools`), pinned by mise (`mise.toml`, `.tool-versions`) or
 * `.deno-version` when the project pins it.
 *
 * The entry file, as Railpack picks it: `main.ts`, `main.js`, `main.mjs` or `main.mts` at the root,
 * else the first `.ts`/`.js`/`.mjs`/`.mts` file of the tree (paths sorted). The build caches its
 * imports (`deno cache <main>`) and the app runs `deno run --allow-all <main>`. Beyond Railpack (which
 * does not read the tasks): a `start` task is how the project says it starts, so it runs with
 * `deno task start`, and a `build` task runs before the cache step. Deno's `serve` listens on 8000
 * unless told otherwise; the app must listen on $PORT.
 */
import { IGNORED_DIRS } from '../detect.rules.js';
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { fileVersion, toolVersion } from './versions.js';

const ROOT_MAINS = ['main.ts', 'main.js', 'main.mjs', 'main.mts'];
const SOURCE = /\.(?:ts|js|mjs|mts)$/;

/** The first source file of the tree, paths sorted (dependency, build and hidden folders skipped). */
function firstSource(f: Facts): string | null {
  const found: string[] = [];
  let folders = 0;
  const walk = (rel: string, depth: number) => {
    if (depth > 6 || ++folders > 500) return;
    const listing = rel ? f.list(rel) : { files: f.files, dirs: f.dirs };
    for (const file of listing.files) if (SOURCE.test(file) && !file.endsWith('.d.ts')) found.push(rel ? `${rel}/${file}` : file);
    for (const d of listing.dirs) if (!IGNORED_DIRS.has(d) && !d.startsWith('.')) walk(rel ? `${rel}/${d}` : d, depth + 1);
  };
  walk('', 0);
  return found.sort()[0] ?? null;
}

/** A task's command in deno.json (`"start": "deno run ..."`, or `{ "command": ... }` since Deno 2.1). */
function task(config: any, name: string): string | null {
  const t = config?.tasks?.[name];
  const cmd = typeof t === 'string' ? t : typeof t?.command === 'string' ? t.command : null;
  return cmd && cmd.trim() ? cmd : null;
}

export const denoProvider: Provider = {
  name: 'deno',
  detect: (f) => f.hasFile('deno.json') || f.hasFile('deno.jsonc'),
  plan(f): Detection {
    const config = f.jsonc(f.hasFile('deno.json') ? 'deno.json' : 'deno.jsonc');
    const version = toolVersion(f, ['deno']) ?? fileVersion(f, '.deno-version');
    const d = detection('deno', { packageManager: 'deno', programs: [], tools: [version ? { name: 'deno', version: version.value } : { name: 'deno' }] });
    if (version) d.version = version;
    const main = ROOT_MAINS.find((m) => f.hasFile(m)) ?? firstSource(f);
    if (task(config, 'build')) d.build.push('deno task build');
    if (main) d.build.push(`deno cache ${main}`);
    if (task(config, 'start')) d.start = 'deno task start';
    else if (main) d.start = `deno run --allow-all ${main}`;
    if (d.start) d.port = 8000;
    return d;
  },
};
