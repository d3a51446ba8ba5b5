/**
 * A short-lived, process-local cache of resolved credentials and `me` answers, so that an
 * authenticated read costs no database round trip. Entries live at most TTL_MS (so another
 * instance's revocation is seen within that time) and the whole cache is dropped at once by
 * `invalidateAuthCache()`, which every write to tokens, sessions, memberships, roles, grants or users
 * calls (so on this instance a revocation is effective immediately).
 */
const TTL_MS = 2000;
const MAX = 10000;

interface Entry<T> {
  value: T;
  at: number;
}

export class TtlCache<T> {
  private readonly map = new Map<string, Entry<T>>();

  get(key: string, now = Date.now()): T | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (now - e.at > TTL_MS) {
      this.map.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: T, now = Date.now()): void {
    if (this.map.size >= MAX) this.map.clear();
    this.map.set(key, { value, at: now });
  }

  clear(): void {
    this.map.clear();
  }
}

const caches: TtlCache<unknown>[] = [];

export function authCache<T>(): TtlCache<T> {
  const c = new TtlCache<T>();
  caches.push(c as TtlCache<unknown>);
  return c;
}

export function invalidateAuthCache(): void {
  for (const c of caches) c.clear();
}
