import type { Actor } from './authz/actor.js';
import type { AppContext } from './context.js';
import type { DeploymentHistoryPort, GitPort, ProjectDependent, ProjectReads, RuntimePort, UploadSourcePort } from './modules/projects/index.js';
import type { BerthRuntime } from './modules/hosting/index.js';

/**
 * What areas offer each other. Each area's ModuleDef declares the ports it provides (`provides`);
 * buildApp() merges them into `ctx.ports` before any module's `init`, and tests replace any of them
 * with `startTestServer({ ports })`. An area that uses another's work reaches it here (typed), never
 * through a setter, a registry or module state. Types only: this file imports no code.
 *
 * Single ports: the last module to provide one wins (tests' fakes come last). Lists and records
 * (`projectDependents`, `deploymentSettled`, `catalogs`) are merged across modules.
 */
export interface Ports {
  /** Credentials to actors (auth area); the route gate authenticates through it. */
  auth: AuthPort;
  /** Short-lived stream tokens (deployments area); the gate's `stream-token` access verifies them. */
  streamTokens: StreamTokenPort | null;
  /** The connected git provider (gitprovider area), null when none is connected. */
  git: GitPort | null;
  /** What runs the projects (deployments area). */
  runtime: RuntimePort | null;
  /** This server's build-and-run engine (deployments area): supervisor, logs, edge proxy, builds in flight. */
  runtimeHost: BerthRuntime | null;
  /** Records other areas keep under a project, removed and previewed with it. */
  projectDependents: ProjectDependent[];
  /** A project's deployments as the projects area reads them (deployments area): its info, its commit status. */
  deploymentHistory: DeploymentHistoryPort | null;
  /** Folder uploads becoming a project's source (uploads area; used by POST /api/projects/ensure). */
  uploadSource: UploadSourcePort | null;
  /** Short-lived reads of projects for GET requests (projects area; its own use only). */
  projectReads: ProjectReads | null;
  /** Told when a deployment settles (ready, failed, cancelled, superseded): the gitprovider's commit statuses and PR comments. */
  deploymentSettled: DeploymentSettled[];
}

/** A deployment that reached a terminal status, as its listeners see it. */
export interface SettledDeployment {
  id: string;
  orgId: string;
  projectId: string;
  environment: string;
  status: 'ready' | 'failed' | 'cancelled' | 'superseded';
  commit: string | null;
  ref: string | null;
  error: string | null;
  /** The URL the environment is served at (production's primary domain, a preview's own host); null when not served. */
  url: string | null;
}

/**
 * Called after the deployment's terminal status is committed, once per deployment and instance that
 * settled it. A listener's failure is logged by the caller and never changes the deployment.
 */
export type DeploymentSettled = (ctx: AppContext, d: SettledDeployment) => Promise<void>;

export interface AuthPort {
  actorFromBearer(ctx: AppContext, token: string): Promise<Actor | null>;
  actorFromSession(ctx: AppContext, sessionToken: string): Promise<Actor | null>;
  actorFromCredentialId(ctx: AppContext, credentialId: string): Promise<Actor | null>;
  memberActor(ctx: AppContext, orgId: string, userId: string): Promise<Actor | null>;
}

export type StreamTokenKind = 'build' | 'server_logs';

export interface StreamTokenInfo {
  orgId: string;
  /** The member who minted it (null: minted by the instance itself, no member to re-check). */
  createdBy: string | null;
  /** The credential it was minted with (its revocation ends the token). */
  credentialId: string | null;
}

export interface StreamTokenPort {
  /** Throws AppError UNAUTHENTICATED for a token that is malformed, unknown, expired or not for this record. */
  verify(ctx: AppContext, token: string, kind: StreamTokenKind, recordId: string): Promise<StreamTokenInfo>;
}

/** How the provisions of a port of type T combine, from the type: a list, a nullable single port, or a record. */
export type PortKind<T> = [T] extends [readonly unknown[]] ? 'list' : null extends T ? 'one' : 'record';

/**
 * The ports a module declares (its `declares`), each with its kind: `one` (null until provided; the last
 * provider wins, and tests' fakes come last), `list` (every provider's entries, appended) or `record`
 * (every provider's keys, merged).
 */
export type PortKinds = { [K in keyof Ports]?: PortKind<Ports[K]> };

/** What the gate finds before the auth module provides its port: nobody. */
const NO_AUTH: AuthPort = {
  async actorFromBearer() {
    return null;
  },
  async actorFromSession() {
    return null;
  },
  async actorFromCredentialId() {
    return null;
  },
  async memberActor() {
    return null;
  },
};

/** Ports declared here rather than by an area (besides `auth`, always set): the ones the gate uses. */
const CORE_PORTS: PortKinds = {
  streamTokens: 'one',
  git: 'one',
  runtime: 'one',
  runtimeHost: 'one',
  projectDependents: 'list',
  uploadSource: 'one',
  projectReads: 'one',
  deploymentSettled: 'list',
  deploymentHistory: 'one',
};

/**
 * One server's ports as buildApp() assembles them: every module's `declares` first (each port is
 * declared once, and starts empty: null, [] or {}), then every module's `provides`, then the caller's
 * replacements (tests' fakes). A provided port that no module declares is an error, not a silent key.
 */
export class PortBoard {
  readonly ports: Ports;
  readonly #declared = new Map<string, { kind: 'one' | 'list' | 'record'; by: string }>();

  constructor() {
    this.ports = { auth: NO_AUTH } as Ports;
    this.#declared.set('auth', { kind: 'one', by: 'src/ports.ts' });
    this.declare('src/ports.ts', CORE_PORTS);
  }

  declare(by: string, kinds: PortKinds): void {
    for (const [key, kind] of Object.entries(kinds) as [string, 'one' | 'list' | 'record'][]) {
      const seen = this.#declared.get(key);
      if (seen) throw new Error(`port ${key} is declared by ${seen.by} and by ${by}`);
      this.#declared.set(key, { kind, by });
      (this.ports as unknown as Record<string, unknown>)[key] = kind === 'list' ? [] : kind === 'record' ? {} : null;
    }
  }

  provide(by: string, add: Partial<Ports>): void {
    const into = this.ports as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(add)) {
      if (value === undefined) continue;
      const declared = this.#declared.get(key);
      if (!declared) throw new Error(`${by} provides port ${key}, which no module declares`);
      if (declared.kind === 'list') into[key] = [...(into[key] as unknown[]), ...(value as unknown[])];
      else if (declared.kind === 'record') into[key] = { ...(into[key] as object), ...(value as object) };
      else into[key] = value;
    }
  }
}
