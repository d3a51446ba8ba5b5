import { EventEmitter } from 'node:events';

/**
 * In-process bus of run and restore events, keyed `run:<id>` / `restore:<id>`. SSE streams
 * subscribe to it; streams also poll the row, so a run executing on another instance is followed too.
 */
export type BackupEvent =
  | { type: 'transition'; data: { from: string; to: string; at: string } }
  | { type: 'progress'; data: { phase: string; bytes: number; totalBytes?: number } };

const bus = new EventEmitter();
bus.setMaxListeners(0);

export function publish(key: string, ev: BackupEvent): void {
  bus.emit(key, ev);
}

export function subscribe(key: string, fn: (ev: BackupEvent) => void): () => void {
  bus.on(key, fn);
  return () => bus.off(key, fn);
}
