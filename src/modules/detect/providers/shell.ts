/**
 * The shell provider: a `start.sh` (or the script railpack.json's `shell.script` names), as Railpack
 * plans it: start `sh start.sh`. This is the one plan where a shell runs, and it runs the app's own
 * script by design; the command itself is plain words. Railpack also `chmod +x`es the script, which
 * `sh <script>` does not need.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { readRailpackConfig } from './railpack-config-file.js';

const SAFE_NAME = /^[\w.-]+(?:\/[\w.-]+)*$/;

/** The script to run: railpack.json's `shell.script` when the file exists, else start.sh. */
export function shellScript(f: Facts): string | null {
  const configured = readRailpackConfig(f)?.shell?.script;
  if (typeof configured === 'string' && SAFE_NAME.test(configured) && !configured.split('/').includes('..') && f.read(configured) !== null) return configured;
  return f.hasFile('start.sh') ? 'start.sh' : null;
}

export const shellProvider: Provider = {
  name: 'shell',
  detect: (f) => shellScript(f) !== null,
  plan(f): Detection {
    const script = shellScript(f) ?? 'start.sh';
    return detection('shell', { programs: ['sh'], start: `sh ${script}` });
  },
};
