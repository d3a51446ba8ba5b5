/**
 * Work on one key, one at a time in this process: callers with the same key run in arrival order.
 * For writes that would otherwise collide in the database (an env PATCH's compare-and-set on its
 * environment's revision): the ones waiting here hold no pool connection, and a caller may hand
 * what it wrote to the next one in line (`handOver`), which can then skip reading it back. What is
 * handed over lives only while callers queue behind each other: the last one out drops it. One per
 * database handle (state of a running server).
 */
export class Serial {
  private readonly queues = new Map<string, { tail: Promise<void>; handed?: unknown }>();

  async run<T, H = unknown>(key: string, fn: (turn: Turn<H>) => Promise<T>): Promise<T> {
    let q = this.queues.get(key);
    const before = q?.tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before ? before.then(() => mine) : mine;
    if (q) q.tail = tail;
    else this.queues.set(key, (q = { tail }));
    const queue = q;
    try {
      if (before) await before;
      const handed = queue.handed as H | undefined;
      queue.handed = undefined;
      return await fn({
        handed,
        handOver: (v: H) => {
          queue.handed = v;
        },
      });
    } finally {
      release();
      if (queue.tail === tail) this.queues.delete(key);
    }
  }
}

/** One caller's turn: what the previous caller handed over (if it did), and how to hand over to the next. */
export interface Turn<H> {
  handed: H | undefined;
  handOver(value: H): void;
}

const byHandle = new WeakMap<object, Serial>();

/** The `Serial` of a database handle (made on first use). */
export function serialOf(db: object): Serial {
  let s = byHandle.get(db);
  if (!s) byHandle.set(db, (s = new Serial()));
  return s;
}
