/** A folder's `railpack.json`: its start command, build commands and variables apply (not written yet). */
import type { Facts } from '../facts.js';
import type { Detection } from '../plan.js';

export function applyRailpackConfig(_f: Facts, d: Detection): Detection {
  return d;
}
