import type { EngineStatus } from '../driver.js';
import { DockerEngine, EngineError, PROBE_TIMEOUT_MS } from './engine.js';

/** How long a probe's answer is served before the next status read refreshes it (in the background). */
export const PROBE_MAX_AGE_MS = 5000;

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

  constructor(env: NodeJS.ProcessEnv = process.env) {
    try {
      this.engine = DockerEngine.fromEnv(env);
    } catch (e) {
      this.engine = null;
      this.last = { reachable: false, error: (e as Error).message };
      this.at = Number.POSITIVE_INFINITY;
    }
  }

  /** The last answer; starts a background refresh when it is stale. */
  status(): EngineStatus {
    if (Date.now() - this.at > PROBE_MAX_AGE_MS) void this.refresh();
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
    this.inflight = (async () => {
      try {
        const v = await engine.version(timeoutMs);
        this.last = { reachable: true, version: v.version, apiVersion: v.apiVersion };
      } catch (e) {
        this.last = { reachable: false, error: e instanceof EngineError ? e.message : `cannot reach the Docker Engine at ${engine.where}: ${(e as Error).message}` };
      } finally {
        this.at = Date.now();
        this.inflight = null;
      }
    })();
    return this.inflight;
  }
}
