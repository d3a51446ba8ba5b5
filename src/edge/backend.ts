import type { CompiledRule } from './rules.js';

/** What the edge knows about the project a host names. */
export interface EdgeTarget {
  projectId: string;
  /** Set when the project cannot serve: disabled, failed or not deployed (503). */
  unavailable: string | null;
  rules: CompiledRule[];
  /**
   * Set when the project is a static site: the edge serves the files of its ready deployment itself
   * (after the route rules), and `upstream` is never asked.
   */
  static?: StaticSite | null;
}

/** A static site's ready deployment, as the edge serves it (src/edge/static-site.ts). */
export interface StaticSite {
  /** The absolute folder `prepareStaticSite` filled (regular files and folders only, never written to again). */
  root: string;
  /** A path with no file and no extension in its last segment answers `/index.html` (200). */
  spa: boolean;
  /** `/about` serves `about.html` (or `about/index.html`); `/about.html` redirects (308) to `/about`. */
  cleanUrls: boolean;
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
