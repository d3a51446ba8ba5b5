import type { EngineStatus } from '../driver.js';
import { DockerEngine, EngineError, PROBE_TIMEOUT_MS } from './engine.js';

/** How long a probe's answer is served before the next status read refreshes it (in the background). */
export const PROBE_MAX_AGE_MS = 5000;
/**
 * How long after start an engine that has not answered yet, and has only been slow (no probe yet, or
 * timeouts), is shown as starting rather than unreachable: a busy engine (builds, many containers, its
 * own start beside Berth's) can take 10-25 s to answer its first request.
 */
export const STARTUP_GRACE_MS = 30_000;
/** The timeout of probes in that grace period: long enough for a busy engine's first answer. */
const STARTUP_PROBE_TIMEOUT_MS = 10_000;

/**
 * The Docker Engine's reachability as the health endpoint shows it, without ever blocking a status
 * read: the last probe's answer is served, and a read that finds it older than PROBE_MAX_AGE_MS starts
 * one new probe in the background (bounded by PROBE_TIMEOUT_MS; never two at a time).
 */
export class EngineProbe {
  private last: EngineStatus = { reachable: false, error: 'the Docker Engine has not been probed yet' };
  private at = 0;
  private inflight: Promise<void> | null = null;
  private readonly engine: DockerEngine | null;
  private readonly startedAt = Date.now();
  /** Some probe has answered (or failed for a reason other than slowness): the grace period is over. */
  private settled = false;

  constructor(
    env: NodeJS.ProcessEnv = process.env,
    private readonly graceMs = STARTUP_GRACE_MS,
  ) {
    try {
      this.engine = DockerEngine.fromEnv(env);
    } catch (e) {
      this.engine = null;
      this.last = { reachable: false, error: (e as Error).message };
      this.at = Number.POSITIVE_INFINITY;
      this.settled = true;
    }
  }

  /** Where the engine is, for messages. */
  get where(): string {
    return this.engine?.where ?? 'DOCKER_HOST';
  }

  /** Still in the grace period after start, with no answer and nothing but slowness so far. */
  get starting(): boolean {
    return !this.settled && Date.now() - this.startedAt < this.graceMs;
  }

  /** The last answer (starting: true while the engine may only be slow to answer its first probe); starts a background refresh when it is stale. */
  status(): EngineStatus {
    if (Date.now() - this.at > PROBE_MAX_AGE_MS) void this.refresh();
    if (this.starting) return { reachable: false, starting: true, error: this.last.error };
    return { ...this.last };
  }

  /**
   * Probes now (or joins the probe in flight); resolves when it has answered or failed. A caller about
   * to refuse work on a failed probe passes a longer timeout: a busy engine may be slow, not gone.
   */
  refresh(timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
    if (!this.engine) return Promise.resolve();
    if (this.inflight) return this.inflight;
    const engine = this.engine;
    if (this.starting) timeoutMs = Math.max(timeoutMs, STARTUP_PROBE_TIMEOUT_MS);
    this.inflight = (async () => {
      try {
        const v = await engine.version(timeoutMs);
        this.last = { reachable: true, version: v.version, apiVersion: v.apiVersion };
        this.settled = true;
      } catch (e) {
        this.last = { reachable: false, error: e instanceof EngineError ? e.message : `cannot reach the Docker Engine at ${engine.where}: ${(e as Error).message}` };
        // No engine, no permission, refused: say so at once. Slow: it may be busy starting.
        if (!(e instanceof EngineError && e.kind === 'timeout')) this.settled = true;
      } finally {
        this.at = Date.now();
        this.inflight = null;
      }
    })();
    return this.inflight;
  }
}
