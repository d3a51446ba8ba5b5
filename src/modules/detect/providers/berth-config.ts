/**
 * `berth.json` (contract section 18): a project's own override of the detected plan, written in its
 * source. Every field is optional:
 *
 * ```json
 * { "installCommand": "npm ci", "buildCommand": "npm run build", "startCommand": "node dist/server.js",
 *   "outputDirectory": "dist", "rootDirectory": "apps/web" }
 * ```
 *
 * - Read from the app folder, and from the source root for the app folder the root's file names
 *   (its `rootDirectory`, or the root itself when it names none); the app folder's own file wins.
 * - Applied last, over the provider, the Procfile and railpack.json; the project's own configured
 *   commands still win over it (src/runtime/build.ts).
 * - `installCommand` / `buildCommand`: one command line each (`""` for no step); `startCommand`: the
 *   app's command; `outputDirectory`: the built files' folder (a static site's when there is no start
 *   command); `rootDirectory`: the app's folder below the source root (only the root's file says it).
 * - An invalid file or field is never fatal: it is ignored, and the plan's `notes` name the file and
 *   the field, for the build log and the scan.
 * - A Dockerfile's plan takes its commands from the Dockerfile: the file only notes that.
 */
import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';
import { Facts } from '../facts.js';
import type { Detection } from '../plan.js';

/** Loaded on first use, not at start (docs/decisions.md, "Memory and authenticated reads again"). */
const requireCjs = createRequire(import.meta.url);

export const BERTH_JSON = 'berth.json';

/** The fields of berth.json, validated. */
export interface BerthConfig {
  installCommand?: string;
  buildCommand?: string;
  startCommand?: string;
  outputDirectory?: string;
  rootDirectory?: string;
}

/** As the project's own fields are held (projects.schemas.ts): commands 2048 characters, folders 512. */
const MAX_COMMAND = 2048;
const MAX_PATH = 512;
const FIELDS = ['installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory'] as const;

/** A folder below the app or source root (`apps/web`, `./dist/`), normalised; null when it climbs out or is absolute. */
export function relativeFolder(value: string): string | null {
  if (value.length > MAX_PATH || value.includes('\0') || value.startsWith('/') || value.includes('\\')) return null;
  const parts = value.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) return null;
  return parts.join('/');
}

/** Checks one field; the value to use, or a note saying why it is ignored. */
function field(name: (typeof FIELDS)[number], v: unknown): { value?: string; note?: string } {
  if (v === null || v === undefined) return {};
  if (typeof v !== 'string') return { note: `${name} must be a string` };
  if (name === 'installCommand' || name === 'buildCommand' || name === 'startCommand') {
    if (v.length > MAX_COMMAND) return { note: `${name} is longer than ${MAX_COMMAND} characters` };
    if (/[\0\r\n]/.test(v)) return { note: `${name} must be one line` };
    if (name === 'startCommand' && !v.trim()) return { note: 'startCommand must not be empty' };
    return { value: v.trim() };
  }
  const dir = relativeFolder(v.trim());
  if (dir === null) return { note: `${name} must be a folder below the ${name === 'rootDirectory' ? 'source root' : 'app folder'} (no "..", not absolute)` };
  if (name === 'outputDirectory' && !dir) return { value: '.' };
  return { value: dir };
}

/** A berth.json's text, validated: the fields to apply and a note per thing ignored (`file` names it in the notes). */
export function parseBerthConfig(text: string, file: string): { config: BerthConfig; notes: string[] } {
  const errors: ParseError[] = [];
  const { parse, printParseErrorCode } = requireCjs('jsonc-parser') as typeof Jsonc;
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false }) as unknown;
  if (errors.length) {
    const e = errors[0]!;
    const line = text.slice(0, e.offset).split('\n').length;
    return { config: {}, notes: [`${file} is not valid JSON (${printParseErrorCode(e.error)} at line ${line}): it is ignored`] };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { config: {}, notes: [`${file} must hold a JSON object: it is ignored`] };
  const config: BerthConfig = {};
  const notes: string[] = [];
  for (const key of Object.keys(value)) {
    if (!(FIELDS as readonly string[]).includes(key)) notes.push(`${file}: unknown field ${JSON.stringify(key.slice(0, 64))} is ignored (fields: ${FIELDS.join(', ')})`);
  }
  for (const name of FIELDS) {
    const got = field(name, (value as Record<string, unknown>)[name]);
    if (got.note) notes.push(`${file}: ${got.note}; the field is ignored`);
    else if (got.value !== undefined) config[name] = got.value;
  }
  return { config, notes };
}

/** The berth.json a folder's own file holds, read through Facts (null when it has none). */
function ownConfig(f: Facts): { config: BerthConfig; notes: string[] } | null {
  if (!f.hasFile(BERTH_JSON)) return null;
  const file = f.rel ? `${f.rel}/${BERTH_JSON}` : BERTH_JSON;
  const text = f.read(BERTH_JSON);
  if (text === null) return { config: {}, notes: [`${file} could not be read (a link, not a regular file, or over 1 MiB): it is ignored`] };
  return parseBerthConfig(text, file);
}

/** The `rootDirectory` the source root's berth.json names ('' for none or an invalid one). */
export function berthRootDirectory(top: Facts): string {
  return ownConfig(top)?.config.rootDirectory ?? '';
}

/** The app folder a fetched source's berth.json names (for the build), or null for the source root itself. */
export function sourceRootDirectory(sourceDir: string): string | null {
  return berthRootDirectory(new Facts(sourceDir, '', null)) || null;
}

/** The berth.json that applies to an app folder: its own, else the source root's when that names this folder. */
export function berthConfigOf(f: Facts): { config: BerthConfig; notes: string[] } | null {
  const own = ownConfig(f);
  if (own) {
    if (f.rel && own.config.rootDirectory !== undefined) {
      delete own.config.rootDirectory;
      own.notes.push(`${f.rel}/${BERTH_JSON}: rootDirectory is read only from the source root's ${BERTH_JSON}; it is ignored here`);
    }
    return own;
  }
  if (!f.rel || !f.workspaceRoot) return null;
  const root = ownConfig(f.workspaceRoot);
  return root && (root.config.rootDirectory ?? '') === f.rel ? root : null;
}

/** Applies the folder's berth.json over the detection (last of the overrides). */
export function applyBerthConfig(f: Facts, detected: Detection): Detection {
  const found = berthConfigOf(f);
  if (!found) return detected;
  const { config } = found;
  const notes = [...(detected.notes ?? []), ...found.notes];
  if (detected.runtime === 'docker') {
    const set = (['installCommand', 'buildCommand', 'startCommand', 'outputDirectory'] as const).filter((k) => config[k] !== undefined);
    if (set.length) notes.push(`${BERTH_JSON}: ${set.join(', ')} do not apply to a Dockerfile build (the Dockerfile says how to build and run; the project's startCommand replaces its CMD)`);
    return notes.length ? { ...detected, notes } : detected;
  }
  const d: Detection = { ...detected, install: [...detected.install], build: [...detected.build], notes };
  if (config.installCommand !== undefined) d.install = config.installCommand ? [config.installCommand] : [];
  if (config.buildCommand !== undefined) d.build = config.buildCommand ? [config.buildCommand] : [];
  if (config.startCommand !== undefined) d.start = config.startCommand;
  if (config.outputDirectory !== undefined) {
    d.outputDirectory = config.outputDirectory;
    // Without a start command the output is served as a static site.
    if (d.static || !d.start) d.static = { outputDirectory: config.outputDirectory, spa: d.static?.spa ?? false };
  }
  if (!d.notes!.length) delete d.notes;
  return d;
}
