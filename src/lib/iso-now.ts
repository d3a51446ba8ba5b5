let isoMs = -1;
let iso = '';

/**
 * `new Date().toISOString()` of now, formatted once per millisecond: a busy edge logs many requests in
 * the same millisecond, and formatting the date was a visible part of each request's cost. (A cache of
 * a pure function of the time, the same for every server in the process.)
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}
