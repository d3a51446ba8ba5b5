import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Db, Dialect } from './db/client.js';
import type { WriteEvents } from './db/write-events.js';
import type { Bus } from './db/notify.js';
import type { Keyring } from './lib/crypto.js';
import type { JobQueue } from './jobs/queue.js';
import type { Scheduler } from './jobs/leader.js';
import type { AccessEvents } from './authz/access-events.js';
import type { Ports } from './ports.js';
import type { AreaState } from './state.js';
import type { Clock } from './lib/clock.js';
import type { UidRange } from './runtime/uid-range.js';

/**
 * What services need from the running program. Built once by buildApp(); services take the parts
 * they need (`{ db, actor, ... }`) and never see HTTP types.
 */
export interface AppContext {
  config: Config;
  db: Db;
  dialect: Dialect;
  /** Which tables are written, as queries are compiled (`src/db/write-events.ts`): read caches listen. */
  writes: WriteEvents;
  /**
   * The notification bus (`src/db/notify.ts`): LISTEN/NOTIFY between the instances sharing a
   * PostgreSQL database, in-process on SQLite. Cache invalidation, job wake-ups, SSE events.
   */
  bus: Bus;
  keyring: Keyring;
  log: Logger;
  /** The time services decide expiry and age by (`src/lib/clock.ts`); tests pass a clock they move. */
  clock: Clock;
  /**
   * The sandbox uid range this server claimed for its data dir at start (`berth serve` as root,
   * src/runtime/uid-range.ts), else null: its projects' uids and the boxes it may open come from it.
   */
  uidRange: UidRange | null;
  jobs: JobQueue;
  /** Leader-only periodic work (cron schedules, sweeps). */
  scheduler: Scheduler;
  /** BERTH_PUBLIC_URL, else http://<host>:<bound port>. */
  publicUrl(): string;
  /** Unique per running process; used for leases and job locks. */
  instanceId: string;
  /** Access-change events: a write that narrows someone's access says so here (caches, open streams). */
  access: AccessEvents;
  /** What areas offer each other (src/ports.ts), merged from every module's `provides`. */
  ports: Ports;
  /** Each area's per-server state (src/state.ts), made by its module's `state`; its own use only. */
  state: AreaState;
}
