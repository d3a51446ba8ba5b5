import type { Actor } from './authz/actor.js';
import type { AppContext } from './context.js';

/**
 * What areas offer each other. This file imports no area: it declares only the ports the route gate
 * itself uses (`auth`, `streamTokens`). Every other port is declared by the area that owns its type,
 * by declaration merging in its own `ports.ts` (`declare module '../../ports.js' { interface Ports {
 * ... } }`), and named with its kind in the area's ModuleDef `declares`. buildApp() assembles them in a
 * PortBoard: declarations, then every module's `provides`, then a test's replacements
 * (`startTestServer({ ports })`). An area that uses another's work reaches it here (typed), never
 * through a setter, a registry or module state.
 *
 * Single ports (`one`): the last provider wins (tests' fakes come last). `list` and `record` ports
 * (`projectDependents`, `deploymentSettled`, `catalogs`) are merged across modules.
 */
export interface Ports {
  /** Credentials to actors (auth area); the route gate authenticates through it. */
  auth: AuthPort;
  /** Short-lived stream tokens (deployments area); the gate's `stream-token` access verifies them. */
  streamTokens: StreamTokenPort | null;
}

export interface AuthPort {
  /** A credential's actor; answered without a promise when this server's cache knows the credential. */
  actorFromBearer(ctx: AppContext, token: string): Actor | null | Promise<Actor | null>;
  actorFromSession(ctx: AppContext, sessionToken: string): Actor | null | Promise<Actor | null>;
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
