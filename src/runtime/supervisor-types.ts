/** The supervisor's public types (supervisor.ts): an app's state, its snapshot, and the supervisor's options. */
import type { Logger } from 'pino';
import type { RuntimeDriver } from './driver.js';
import type { LogStore } from './logs.js';

export type RuntimeStateName = 'starting' | 'running' | 'sleeping' | 'stopped' | 'crashed' | 'failed';

export interface RuntimeSnapshot {
  state: RuntimeStateName;
  port?: number;
  pid?: number;
  startedAt?: string;
  deploymentId?: string;
  restarts: number;
}

/**
 * Where a deploy's start reports that it is still running (the deployment's build log): while the
 * app's runtime log gets no line for the still-running interval, `log` gets
 * `[berth] still running: <step> (<n> s without output)` (`step`: the start as the build log names it).
 */
export interface StartProgress {
  step: string;
  log(line: string): void;
  /** The interval (default: silentStepMs()). */
  silentMs?: number;
}

export interface SupervisorOptions {
  logs: LogStore;
  driver: RuntimeDriver;
  log: Logger;
  /** Base environment every app gets (PATH, LANG, ...); never the server's own environment. */
  baseEnv: Record<string, string>;
  healthTimeoutMs?: number;
  graceMs?: number;
  /** Called on every state change (persisted by the runtime so a restart can bring apps back), with the app's key. */
  onState?(app: string, snap: RuntimeSnapshot): void;
  /**
   * Awaited after a new instance takes the app's traffic and before the one it replaced is stopped: the
   * edge on its worker thread answers once it no longer sends requests to the old address.
   */
  promoted?(app: string): Promise<void>;
}
