import path from 'node:path';
import { ExtractError } from './extract-error.js';
import { DEFAULT_LIMITS } from './limits.js';

const MAX_PATH_BYTES = 4096;
const MAX_SEGMENT_BYTES = 255;

/**
 * The entry path as a clean relative POSIX path ('' for the root itself), or an ExtractError.
 * Exported for tests and for the CLI packer.
 */
export function safeEntryPath(raw: string, maxDepth = DEFAULT_LIMITS.maxDepth): string {
  const show = JSON.stringify(raw.slice(0, 200));
  if (raw.includes('\0')) throw new ExtractError('hostile', `entry ${show} has a NUL byte in its path`, raw);
  if (Buffer.byteLength(raw) > MAX_PATH_BYTES) throw new ExtractError('hostile', `entry path is longer than ${MAX_PATH_BYTES} bytes`, raw.slice(0, 200));
  if (raw.includes('\\')) throw new ExtractError('hostile', `entry ${show} has a backslash in its path`, raw);
  if (raw.startsWith('/')) throw new ExtractError('hostile', `entry ${show} has an absolute path`, raw);
  if (/^[A-Za-z]:/.test(raw)) throw new ExtractError('hostile', `entry ${show} has a drive-letter path`, raw);
  const parts: string[] = [];
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') throw new ExtractError('hostile', `entry ${show} leaves the upload root (..)`, raw);
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES) throw new ExtractError('hostile', `entry ${show} has a path segment longer than ${MAX_SEGMENT_BYTES} bytes`, raw);
    parts.push(seg);
  }
  if (parts.length > maxDepth) throw new ExtractError('limit', `entry ${show} is nested deeper than ${maxDepth} folders`, raw);
  return parts.join('/');
}

/** Does a link target (relative to `base`, a relative dir inside the root) stay inside the root? */
export function linkStaysInside(base: string, target: string): boolean {
  if (!target || target.includes('\0') || target.includes('\\') || target.startsWith('/') || /^[A-Za-z]:/.test(target)) return false;
  const joined = path.posix.normalize(path.posix.join(base || '.', target));
  return joined !== '..' && !joined.startsWith('../') && !path.posix.isAbsolute(joined);
}
