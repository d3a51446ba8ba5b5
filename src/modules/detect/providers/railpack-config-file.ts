/**
 * Reading a folder's `railpack.json`. Railpack accepts comments in it (`//`, block comments) and
 * trailing commas, as `Facts.jsonc` does. Anything that is not an object reads
 * as no config.
 */
import type { Facts } from '../facts.js';

/** The fields of railpack.json that Berth reads. */
export interface RailpackConfig {
  provider?: unknown;
  packages?: unknown;
  steps?: Record<string, { commands?: unknown } | undefined>;
  deploy?: { startCommand?: unknown; variables?: unknown };
  shell?: { script?: unknown };
  [key: string]: any;
}

/** The folder's railpack.json, parsed (null when missing, invalid, or not an object). */
export function readRailpackConfig(f: Facts): RailpackConfig | null {
  const v = f.jsonc('railpack.json') as unknown;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as RailpackConfig) : null;
}
