/**
 * What runs managed services on this server (the services area's per-server state). The service use
 * cases tell it what the owner wants; it brings the processes there and writes `status` back.
 */
import type { EnginePlan } from './engines.js';
import type { RuntimeOffer } from './kinds.js';
import type { ScratchInstance } from './scratch.js';

import type { BoxProcess } from '../../runtime/driver.js';
import type { UsageTarget } from '../../runtime/usage.js';
import type { WatchedVolume } from '../hosting/index.js';
import type { ManagedServiceRow } from './services.store.js';

export interface ServiceRunner {
  /** Brings the service to running (first start makes its data folder), or leaves it running. */
  ensure(row: ManagedServiceRow): void;
  /** Stops it (its data stays), resolving once every process of it is gone. */
  stop(id: string): Promise<void>;
  /** Stops and starts it again (new limits apply). */
  restart(row: ManagedServiceRow): Promise<void>;
  /** Where the same project's app reaches it now, or null when it does not run here. */
  address(id: string): { host: string; port: number } | null;
  /** Its address once it is running (a start under way is waited for); null when it is not starting here, or after `timeoutMs`. */
  whenRunning(id: string, timeoutMs: number): Promise<{ host: string; port: number } | null>;
  /** The folder of its data (`keepVolume` keeps it). */
  volumeDir(row: Pick<ManagedServiceRow, 'projectId' | 'id'>): string;
  /** The last lines it wrote (secrets redacted), kept after it stopped or failed. */
  logs(id: string): string[];
  /** Calls `fn` with each line it writes from now on (secrets redacted); answers the unsubscribe. */
  follow(id: string, fn: (line: string) => void): () => void;
  /** Its processes now (host pids). */
  pids(id: string): number[];
  /** The services running now, as the metrics sampler reads them (their boxes' usage). */
  usageTargets(): UsageTarget[];
  /** The data folders of the services running now, for the disk watch (disk.near_limit). */
  volumes(): WatchedVolume[];
  /** It was deleted: nothing of it is kept (its log). */
  forget(id: string): void;
  /** A client program (a dump) run inside the service's own box, where the server cannot reach it from the host (docker runtime); null elsewhere or when it does not run. */
  inService(id: string, argv: string[], env: Record<string, string>): BoxProcess | null;
  /** A throwaway instance of the service on `dataDir` (restores and restore tests; scratch.ts). */
  scratch(row: ManagedServiceRow, dataDir: string, name: string, adapt?: (plan: EnginePlan) => EnginePlan): Promise<ScratchInstance>;
  /** Server shutdown: stops every service. */
  close(): Promise<void>;
}

export interface ServicesState {
  runner: ServiceRunner | null;
  /** What each runtime offers, looked up once per server (GET /api/services/kinds). */
  offers: Promise<RuntimeOffer[]> | null;
  /** Preview instances being made on this server (`<projectId>/<environment>/<sourceId>`): a second caller waits for the first. */
  seeding: Map<string, Promise<void>>;
}

declare module '../../state.js' {
  interface AreaState {
    /** Managed services' runner on this server (null until the area started). */
    services: ServicesState;
  }
}
