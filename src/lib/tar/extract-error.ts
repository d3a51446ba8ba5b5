import path from 'node:path';

export type ExtractErrorKind = 'invalid' | 'hostile' | 'limit';

/** Why an extraction stopped: a corrupt archive, a hostile entry, or a cap. */
export class ExtractError extends Error {
  constructor(
    readonly kind: ExtractErrorKind,
    message: string,
    readonly entry?: string,
  ) {
    super(message);
    this.name = 'ExtractError';
  }
}

/** A filesystem error met while writing the tree, as the ExtractError the uploader sees. */
export function writeError(e: NodeJS.ErrnoException): ExtractError {
  if (e instanceof ExtractError) return e;
  const where = e.path ? ` (${JSON.stringify(e.path.split(path.sep).slice(-3).join('/'))})` : '';
  if (e.code === 'ENOTDIR' || e.code === 'EEXIST' || e.code === 'EISDIR' || e.code === 'ELOOP') {
    return new ExtractError('invalid', `the archive uses one path both as a file and as a folder${where}`);
  }
  if (e.code === 'ENOSPC') return new ExtractError('limit', 'the server is out of disk space');
  return new ExtractError('invalid', `could not write an entry${where}: ${e.code ?? e.message}`);
}

/** node-tar's error or warning text without its `TAR_...:` code prefix, at most 200 characters. */
export function cleanTarMessage(m: unknown): string {
  const s = m instanceof Error ? m.message : String(m);
  return s.replace(/^TAR_\w+:\s*/, '').slice(0, 200);
}
