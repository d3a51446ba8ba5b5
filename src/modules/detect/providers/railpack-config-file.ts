/**
 * Reading a folder's `railpack.json`. Railpack accepts comments in it (`//`, block comments) and
 * trailing commas, so they are removed before JSON parsing. Anything that is not an object reads
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

/** JSON with comments and trailing commas, made plain JSON (string contents untouched). */
export function stripJsonc(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  // Trailing commas: a comma followed only by blanks before `}` or `]` (strings are already whole, so
  // re-scan with string awareness).
  let res = '';
  for (let k = 0; k < out.length; k++) {
    const c = out[k]!;
    if (c === '"') {
      let j = k + 1;
      while (j < out.length && out[j] !== '"') j += out[j] === '\\' ? 2 : 1;
      res += out.slice(k, j + 1);
      k = j;
      continue;
    }
    if (c === ',') {
      let j = k + 1;
      while (j < out.length && /\s/.test(out[j]!)) j++;
      if (out[j] === '}' || out[j] === ']') continue;
    }
    res += c;
  }
  return res;
}

/** The folder's railpack.json, parsed (null when missing, invalid, or not an object). */
export function readRailpackConfig(f: Facts): RailpackConfig | null {
  const text = f.read('railpack.json');
  if (text === null) return null;
  try {
    const v = JSON.parse(stripJsonc(text)) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as RailpackConfig) : null;
  } catch {
    return null;
  }
}
