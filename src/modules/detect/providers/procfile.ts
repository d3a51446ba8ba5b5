/** A `Procfile`'s `web:` line is the start command, whatever the provider planned (not written yet). */
import type { Facts } from '../facts.js';
import type { Detection } from '../plan.js';

export function applyProcfile(_f: Facts, d: Detection): Detection {
  return d;
}
