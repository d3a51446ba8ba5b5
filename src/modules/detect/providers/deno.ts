/** The deno provider: deno.json / deno.jsonc, run with deno from the npm registry. */
import { detection, type Detection, type Provider } from '../plan.js';

export const denoProvider: Provider = {
  name: 'deno',
  detect: (f) => f.hasFile('deno.json') || f.hasFile('deno.jsonc'),
  plan(f): Detection {
    const main = ['main.ts', 'server.ts', 'mod.ts', 'main.js'].find((x) => f.hasFile(x)) ?? 'main.ts';
    return detection('deno', { programs: [], tools: [{ name: 'deno' }], start: `deno run --allow-net --allow-env --allow-read ${main}`, port: 8000 });
  },
};
