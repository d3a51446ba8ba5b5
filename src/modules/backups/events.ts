import { EventEmitter } from 'node:events';

/**
 * The server's bus of run and restore events, keyed `run:<id>` / `restore:<id>`. SSE streams
 * subscribe to it; streams also poll the row, so a run executing on another instance is followed too.
 * One per running server (BackupsRuntime), never shared between servers of one process.
 */
export type BackupEvent =
  | { type: 'transition'; data: { from: string; to: string; at: string } }
  | { type: 'progress'; data: { phase: string; bytes: number; totalBytes?: number } };

export class BackupEvents {
  private readonly bus = new EventEmitter();

  constructor() {
    this.bus.setMaxListeners(0);
  }

  publish(key: string, ev: BackupEvent): void {
    this.bus.emit(key, ev);
  }

  subscribe(key: string, fn: (ev: BackupEvent) => void): () => void {
    this.bus.on(key, fn);
    return () => this.bus.off(key, fn);
  }
}
