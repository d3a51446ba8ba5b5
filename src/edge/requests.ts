import { RequestStats } from './request-stats.js';

/** One request served (or refused) by the edge for a project. */
export interface RequestEntry {
  ts: string;
  method: string;
  /** The path without the query string (query values can carry credentials). */
  path: string;
  status: number;
  durationMs: number;
  ip: string;
  bytes: number;
}

/** Where the edge records what it served: the RequestLog, or the threaded edge's batches to it (src/edge/thread/). */
export interface RequestSink {
  record(projectId: string, e: RequestEntry): void;
}

type Listener = (e: RequestEntry) => void;

/**
 * The recent requests of every project: a bounded ring per project (newest last) and live
 * subscribers for the server-log stream. In memory: a restart starts the rings empty (the kept
 * request log on disk is written through `onRecord`).
 */
export class RequestLog implements RequestSink {
  /** Per project: a fixed-size circular buffer and the index of the next write. */
  private readonly rings = new Map<string, { buf: RequestEntry[]; next: number }>();
  private readonly listeners = new Map<string, Set<Listener>>();
  /** The per-app counts and durations the metrics sampler drains (request-stats.ts). */
  readonly stats = new RequestStats();
  /** Told of every entry recorded (the hosting area keeps them on disk: docs/logs.md). */
  onRecord: ((projectId: string, e: RequestEntry) => void) | null = null;

  constructor(private readonly capacity = 1000) {}

  record(projectId: string, e: RequestEntry): void {
    this.stats.add(projectId, e.status, e.durationMs, e.bytes);
    this.onRecord?.(projectId, e);
    let ring = this.rings.get(projectId);
    if (!ring) {
      ring = { buf: [], next: 0 };
      this.rings.set(projectId, ring);
    }
    if (ring.buf.length < this.capacity) ring.buf.push(e);
    else ring.buf[ring.next] = e;
    ring.next = (ring.next + 1) % this.capacity;
    const ls = this.listeners.get(projectId);
    if (ls) {
      for (const fn of ls) {
        try {
          fn(e);
        } catch {
          /* one broken subscriber must not stop the others */
        }
      }
    }
  }

  recent(projectId: string, limit = 100): RequestEntry[] {
    const ring = this.rings.get(projectId);
    if (!ring) return [];
    const ordered = ring.buf.length < this.capacity ? ring.buf : [...ring.buf.slice(ring.next), ...ring.buf.slice(0, ring.next)];
    const n = Math.max(1, Math.min(limit, this.capacity));
    return ordered.slice(-n);
  }

  subscribe(projectId: string, fn: Listener): () => void {
    let ls = this.listeners.get(projectId);
    if (!ls) {
      ls = new Set();
      this.listeners.set(projectId, ls);
    }
    ls.add(fn);
    return () => {
      ls!.delete(fn);
      if (ls!.size === 0) this.listeners.delete(projectId);
    };
  }

  forget(projectId: string): void {
    this.rings.delete(projectId);
    this.stats.forget(projectId);
  }
}
