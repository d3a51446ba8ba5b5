import type * as Undici from 'undici';

/**
 * undici, loaded on first use: it is about 20 MB of resident memory, and only the edge (once it
 * proxies a request) and a cloud link need it, so a server that does neither never pays for it.
 */
let loaded: typeof Undici | undefined;
let loading: Promise<typeof Undici> | undefined;

export function loadUndici(): Promise<typeof Undici> {
  if (loaded) return Promise.resolve(loaded);
  loading ??= import('undici').then((m) => (loaded = m));
  return loading;
}

/** undici if it is already loaded (the edge's hot path avoids an await per request). */
export function undiciIfLoaded(): typeof Undici | undefined {
  return loaded;
}
