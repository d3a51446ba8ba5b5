import { EventEmitter } from 'node:events';
import type { Bus } from '../../db/notify.js';

/**
 * The server's bus of run and restore events, keyed `run:<id>` / `restore:<id>`. SSE streams
 * subscribe to it (and also poll the row). Events reach this server's subscribers at once, and every
 * other instance sharing the database through the notification bus (`ctx.bus`, channel
 * `backup:<key>`): transitions each, progress at most every PROGRESS_EVERY_MS per record (the latest
 * one; a client connected to another instance sees a run's progress as it goes). One per running
 * server (BackupsRuntime), never shared between servers of one process.
 */
export type BackupEvent =
  | { type: 'transition'; data: { from: string; to: string; at: string } }
  | { type: 'progress'; data: { phase: string; bytes: number; totalBytes?: number } };

const PROGRESS_EVERY_MS = 200;

export class BackupEvents {
  private readonly local = new EventEmitter();
  /** Per key: when progress last went out on the bus, and the one waiting for its turn. */
  private readonly throttled = new Map<string, { at: number; waiting: BackupEvent | null; timer: NodeJS.Timeout | null }>();

  constructor(private readonly bus?: Pick<Bus, 'instanceId' | 'shared' | 'publish' | 'subscribe'>) {
    this.local.setMaxListeners(0);
  }

  publish(key: string, ev: BackupEvent): void {
    this.local.emit(key, ev);
    if (!this.bus?.shared) return;
    if (ev.type === 'transition') {
      this.flush(key);
      this.send(key, ev);
      return;
    }
    const now = Date.now();
    const t = this.throttled.get(key) ?? { at: 0, waiting: null, timer: null };
    this.throttled.set(key, t);
    if (now - t.at >= PROGRESS_EVERY_MS && !t.timer) {
      t.at = now;
      this.send(key, ev);
      return;
    }
    t.waiting = ev;
    t.timer ??= setTimeout(() => this.flush(key), Math.max(0, PROGRESS_EVERY_MS - (now - t.at)));
    t.timer.unref?.();
  }

  subscribe(key: string, fn: (ev: BackupEvent) => void): () => void {
    this.local.on(key, fn);
    const bus = this.bus;
    const off = bus?.shared ? bus.subscribe(`backup:${key}`, (ev: BackupEvent, origin) => origin !== bus.instanceId && isEvent(ev) && fn(ev)) : null;
    return () => {
      this.local.off(key, fn);
      off?.();
    };
  }

  /** Sends the progress still waiting for `key` (before a transition, so the order holds). */
  private flush(key: string): void {
    const t = this.throttled.get(key);
    if (!t) return;
    if (t.timer) clearTimeout(t.timer);
    this.throttled.delete(key);
    if (t.waiting) this.send(key, t.waiting);
  }

  private send(key: string, ev: BackupEvent): void {
    void this.bus!.publish(`backup:${key}`, ev).catch(() => {});
  }
}

function isEvent(ev: unknown): ev is BackupEvent {
  const e = ev as BackupEvent | null;
  return !!e && (e.type === 'transition' || e.type === 'progress') && typeof e.data === 'object' && e.data !== null;
}
