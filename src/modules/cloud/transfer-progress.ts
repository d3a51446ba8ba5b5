/**
 * A transfer with `includeData` run in the background (docs/cloud.md "Transfers with data"): the POST
 * answers 202 at once with the transfer's id when the caller asked for it (`Prefer: respond-async`),
 * and its progress (each service's dump: bytes written, sent, received, loaded) is a record the caller
 * reads (`GET /api/projects/:id/transfers/:transferId`) or follows as Server-Sent Events (`.../events`).
 *
 * Kept in this server's memory, not the jobs table (docs/decisions.md): a transfer is not safe to run
 * again after a crash half-way (a cloud copy made, data loaded, then a flip), so a durable job retried
 * by another instance would be wrong; one that dies with its server is over, as a synchronous one is.
 * A finished record is kept for an hour.
 */
import { newId, nowIso } from '../../lib/ids.js';
import { AppError } from '../../lib/errors.js';
import type { TransferResult } from './transfer.service.js';

export type TransferPhase = 'dump' | 'send' | 'receive' | 'load';

/** Where a transfer is: the service whose data moves, what happens to it, and how many bytes of it so far. */
export interface TransferProgress {
  phase: TransferPhase;
  service: string;
  bytes: number;
  totalBytes?: number;
}

export type ReportProgress = (p: TransferProgress) => void;

export interface TransferRecord {
  id: string;
  projectId: string;
  direction: 'to-cloud' | 'to-self-hosted';
  status: 'running' | 'succeeded' | 'failed';
  progress: TransferProgress | null;
  result: TransferResult | null;
  error: { code: string; message: string; field?: string } | null;
  startedAt: string;
  finishedAt: string | null;
}

interface Entry {
  orgId: string;
  record: TransferRecord;
  listeners: Set<(event: 'progress' | 'complete', record: TransferRecord) => void>;
  lastSent: number;
}

const KEEP_MS = 60 * 60_000;
/** Progress events at most this often per transfer (the last one of a phase is always sent). */
const EVERY_MS = 250;

/** This server's transfers running or finished within the hour (`ctx.state.transfers`). */
export class TransferTracker {
  private readonly entries = new Map<string, Entry>();

  /** Runs `work` in the background as a new transfer; answers its record (status `running`). */
  start(orgId: string, projectId: string, direction: TransferRecord['direction'], work: (report: ReportProgress) => Promise<TransferResult>): TransferRecord {
    this.prune();
    const record: TransferRecord = { id: newId('xfr'), projectId, direction, status: 'running', progress: null, result: null, error: null, startedAt: nowIso(), finishedAt: null };
    const entry: Entry = { orgId, record, listeners: new Set(), lastSent: 0 };
    this.entries.set(record.id, entry);
    const report: ReportProgress = (p) => {
      const phaseChanged = record.progress?.phase !== p.phase || record.progress?.service !== p.service;
      record.progress = p;
      const now = Date.now();
      if (!phaseChanged && p.bytes !== p.totalBytes && now - entry.lastSent < EVERY_MS) return;
      entry.lastSent = now;
      for (const fn of entry.listeners) fn('progress', record);
    };
    void work(report).then(
      (result) => this.finish(entry, { status: 'succeeded', result }),
      (e: unknown) => {
        const err = e instanceof AppError ? { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) } : { code: 'INTERNAL', message: 'the transfer failed; the server log has the cause' };
        this.finish(entry, { status: 'failed', error: err });
      },
    );
    return { ...record };
  }

  private finish(entry: Entry, end: Partial<TransferRecord>): void {
    Object.assign(entry.record, end, { finishedAt: nowIso() });
    for (const fn of entry.listeners) fn('complete', entry.record);
    entry.listeners.clear();
  }

  /** The project's transfer running now, if any. */
  runningFor(orgId: string, projectId: string): TransferRecord | undefined {
    for (const e of this.entries.values()) if (e.orgId === orgId && e.record.projectId === projectId && e.record.status === 'running') return { ...e.record };
    return undefined;
  }

  /** The transfer of the org's project, or undefined (another org's or project's is not found). */
  get(orgId: string, projectId: string, id: string): TransferRecord | undefined {
    const e = this.entries.get(id);
    return e && e.orgId === orgId && e.record.projectId === projectId ? { ...e.record } : undefined;
  }

  /** Calls `fn` on each progress event and once on completion (at once when already over); answers the unsubscribe. */
  follow(id: string, fn: (event: 'progress' | 'complete', record: TransferRecord) => void): () => void {
    const e = this.entries.get(id);
    if (!e) return () => {};
    if (e.record.status !== 'running') {
      fn('complete', { ...e.record });
      return () => {};
    }
    e.listeners.add(fn);
    return () => e.listeners.delete(fn);
  }

  private prune(): void {
    const before = Date.now() - KEEP_MS;
    for (const [id, e] of this.entries) if (e.record.finishedAt && Date.parse(e.record.finishedAt) < before) this.entries.delete(id);
  }
}

declare module '../../state.js' {
  interface AreaState {
    /** Transfers with data run in the background on this server. */
    transfers: TransferTracker;
  }
}
