import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { redactedLines } from '../app-output.js';
import type { LogFile } from '../logs.js';

/**
 * The log follower of each app's Swarm service (one per app): its tasks' output, demultiplexed and
 * redacted, into the app's runtime log. `owner` is the instance the follower serves; `current` the
 * secrets of the release that runs (a start in flight redacts those and its own).
 */
export class ServiceLogFollowers {
  private readonly followers = new Map<string, { owner: object | null; current: string[]; stop(): void }>();

  constructor(private readonly api: Docker) {}

  /**
   * Follows the service's output (every task's) into the app's log, replacing the project's previous
   * follower; redacts the new release's secrets and those of the release that runs now (an update that
   * fails leaves the old release running under this follower).
   */
  follow(app: string, secretsOfRelease: string[], name: string, logFile: LogFile, since: number): void {
    const prev = this.followers.get(app);
    const current = prev?.current ?? [];
    this.stop(app);
    let stream: Readable | null = null;
    let stopped = false;
    this.followers.set(app, {
      owner: null,
      current,
      stop: () => {
        stopped = true;
        stream?.destroy();
      },
    });
    const secrets = [...new Set([...current, ...secretsOfRelease])];
    void this.api
      .getService(name)
      .logs({ stdout: true, stderr: true, follow: true, since })
      .then((s) => {
        stream = s as unknown as Readable;
        if (stopped) return void stream.destroy();
        const out = new PassThrough();
        const err = new PassThrough();
        this.api.modem.demuxStream(stream, out, err);
        const end = () => {
          out.end();
          err.end();
        };
        stream.on('end', end);
        stream.on('close', end);
        stream.on('error', end);
        redactedLines({ stdout: out, stderr: err }, secrets, (s2, line) => logFile.append({ ts: new Date().toISOString(), stream: s2, line }));
      })
      .catch(() => {});
  }

  stop(app: string): void {
    this.followers.get(app)?.stop();
    this.followers.delete(app);
  }

  /** Once a release is healthy: the follower serves its instance, and redacts its secrets from now on. */
  adopt(app: string, owner: object, secrets: string[]): void {
    const f = this.followers.get(app);
    if (f) {
      f.owner = owner;
      f.current = secrets;
    }
  }

  /** Stops the app's follower if it still serves `owner` (a newer release's follower stays). */
  stopIfOwnedBy(app: string, owner: object): void {
    if (this.followers.get(app)?.owner === owner) this.stop(app);
  }
}
