import type { Limits } from './cgroups.js';
import type { CommandStep } from './command.js';
import type { Identity } from './driver.js';

/** Everything needed to run one release of a project. */
export interface ReleaseSpec {
  projectId: string;
  /**
   * The app the release runs as, when it is not the project's production app: a preview
   * environment's key (`<projectId>-<hash>`). The supervisor, the runtime log, and the names of the
   * box, cgroup, container, network and service derive from `appOf(spec)`, so a preview runs beside
   * production as an app of its own with the same isolation. Absent: the project's id (production).
   */
  app?: string;
  orgId: string;
  deploymentId: string;
  /** The release's source folder (shown at `/app` in a sandbox). */
  appRoot: string;
  /** The app's working directory: `appRoot` or its root directory below it. */
  cwd: string;
  /**
   * The start command as argument arrays, made with the app's final environment (so `$PORT` expands
   * to the port it listens on); every step but the last must exit 0 first.
   */
  steps(env: Record<string, string>): CommandStep[];
  /** The project's variables (plain and secret) for the environment. */
  env: Record<string, string>;
  /** Secret values, redacted from the app's log lines. */
  secrets: string[];
  /** The project's volume on the host (`/data` in a sandbox, `DATA_DIR`); a preview environment's own one. */
  dataDir: string;
  /** The volume's disk limit (`diskMb`): it is put on an image of that size when limits are enforced (disk-limits.ts). */
  diskMb?: number;
  limits: Limits;
  /** The project's own uid/gid (sandbox driver as root). */
  identity: Identity | null;
  /** The project's configured port: what the app listens on inside its own network. */
  port: number;
  /** `PATH` of the app given the folder it runs in and the release's root (as the box shows them). */
  path(cwdInside: string, rootInside: string): string;
  /**
   * The release's image (docker driver): `berth/<project-slug>:<deployment-id>`. Its `/app` holds
   * `appRoot` (plan images) or whatever its Dockerfile put there.
   */
  image?: string;
  /**
   * The image's own ENTRYPOINT/CMD runs (a Dockerfile build without a project start command), not
   * `steps`; `cwd` is then the image's own working directory.
   */
  imageCommand?: boolean;
  /** Replicas (Swarm services; `resources.production.replicas`, default 1). */
  replicas?: number;
}

/** The key a release runs under: its `app`, else its project's id (production). */
export function appOf(spec: Pick<ReleaseSpec, 'app' | 'projectId'>): string {
  return spec.app ?? spec.projectId;
}

/** Where the edge sends a request: the app's address as the server reaches it. */
export interface Upstream {
  host: string;
  port: number;
  /** `host:port`, the key of the edge's connection pool. */
  key: string;
  /**
   * An app behind several addresses (a Swarm service's tasks, swarm-balancer.ts): the address for one
   * request, asked per request; null: this one.
   */
  pick?: () => Upstream | null;
  /** With `pick`: every address it picks from now (the threaded edge caches these and picks itself). */
  lanes?: () => Upstream[];
}

export class StartError extends Error {
  /** `superseded`: the start was overtaken by a newer one of the same app (a deploy while it woke). */
  constructor(message: string, readonly superseded = false) {
    super(message);
    this.name = 'StartError';
  }
}
