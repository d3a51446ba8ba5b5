import type { CompiledRule } from './rules.js';

/** What the edge knows about the project a host names. */
export interface EdgeTarget {
  projectId: string;
  /** Set when the project cannot serve: disabled, failed or not deployed (503). */
  unavailable: string | null;
  rules: CompiledRule[];
}

export interface EdgeBackend {
  /** The project a host (lowercase, no port) names, or null (404). */
  lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null>;
  /** The address of the project's running app; wakes a sleeping app (held until healthy). Throws when it cannot serve. */
  upstream(projectId: string): EdgeUpstream | Promise<EdgeUpstream>;
}

/** Where a project's app is reached (its sandbox's address or loopback); `key` is `host:port`. */
export interface EdgeUpstream {
  host: string;
  port: number;
  key: string;
}
