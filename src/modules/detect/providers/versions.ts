/**
 * Version pins a project's files carry, shared by the providers: `mise.toml` / `.mise.toml`
 * (`[tools] node = "20"`), asdf's `.tool-versions` (`nodejs 20.11.0`), and plain version files
 * (`.nvmrc`, `.python-version`, `.ruby-version`, ...). The first file that pins the tool wins, in
 * the order a provider lists them; its name is answered with the version.
 */
import type { Facts } from '../facts.js';

export interface Pin {
  value: string;
  source: string;
}

/** A version written in a plain file (`v20.11.0`, `lts/iron`, `3.12`), trimmed of a leading `v`. */
export function fileVersion(f: Facts, file: string): Pin | null {
  const text = f.read(file) ?? f.top.read(file);
  if (text === null) return null;
  const line = text.split('\n').map((l) => l.replace(/#.*$/, '').trim()).find((l) => l);
  if (!line) return null;
  return { value: line.replace(/^v(?=\d)/, '').replace(/^(ruby|python)-/, ''), source: file };
}

/** The tool's version in mise.toml (`[tools]`), then `.tool-versions`. `names` are the tool's aliases there. */
export function toolVersion(f: Facts, names: string[]): Pin | null {
  for (const file of ['mise.toml', '.mise.toml']) {
    const toml = f.toml(file) ?? f.top.toml(file);
    const tools = toml?.tools;
    if (!tools || typeof tools !== 'object') continue;
    for (const n of names) {
      const v = (tools as Record<string, unknown>)[n];
      const value = typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : v && typeof v === 'object' && typeof (v as { version?: unknown }).version === 'string' ? (v as { version: string }).version : null;
      if (value) return { value, source: file };
    }
  }
  const tv = f.read('.tool-versions') ?? f.top.read('.tool-versions');
  if (tv) {
    for (const line of tv.split('\n')) {
      const [tool, version] = line.replace(/#.*$/, '').trim().split(/\s+/);
      if (tool && version && names.includes(tool)) return { value: version, source: '.tool-versions' };
    }
  }
  return null;
}

/** The first pin found: the provider's own version files, then mise and asdf. */
export function pinned(f: Facts, files: string[], toolNames: string[]): Pin | null {
  for (const file of files) {
    const p = fileVersion(f, file);
    if (p) return p;
  }
  return toolVersion(f, toolNames);
}
