let second = 0;
let text = '';

/**
 * The current time as an HTTP `Date` value (RFC 9110 IMF-fixdate), made once a second (the edge's fast
 * path dates every answer an app sent undated; a cache of a pure function of the time, like iso-now.ts).
 */
export function httpDate(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== second) {
    second = s;
    text = new Date(s * 1000).toUTCString();
  }
  return text;
}
