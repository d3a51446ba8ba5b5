import type { CompiledRule, RuleRow } from './rules.js';

/** What the edge knows about the project a host names. */
export interface EdgeTarget {
  /**
   * The app the host names, the key of its upstream, open connections and request log: the project's
   * id, or a preview environment's own key (`<projectId>-<hash>`) for a preview host.
   */
  projectId: string;
  /** Set when the project cannot serve: disabled, failed or not deployed (503). */
  unavailable: string | null;
  rules: CompiledRule[];
  /** The rows `rules` were compiled from (the threaded edge compiles them again on its thread: rules hold functions). */
  ruleRows?: RuleRow[];
  /**
   * Set when the project is a static site: the edge serves the files of its ready deployment itself
   * (after the route rules), and `upstream` is never asked.
   */
  static?: StaticSite | null;
  /** Plain HTTP answers 308 to `https://` (config.httpsRedirect, resolved: on only with a TLS listener). */
  httpsRedirect?: boolean;
  /** Responses over TLS carry `Strict-Transport-Security` (config.hsts). */
  hsts?: boolean;
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
  /**
   * The key authorization of a pending ACME HTTP-01 challenge token, or null (404). Absent: the edge
   * does not answer challenges (no certificates), and the path goes to the project like any other.
   */
  acmeChallenge?(token: string): Promise<string | null>;
  /** The port the edge's TLS listener is reached on (redirects name it when it is not 443); null: none. */
  httpsPort?(): number | null;
  /**
   * Several instances on one database (docs/scale-out.md): the edge of the instance that runs the app
   * when it is another one (the request goes there as it came, src/edge/forward.ts), else null.
   */
  peer?(app: string): EdgeUpstream | null;
  /** The secret a forwarded request carries between the instances' edges (with `peer`). */
  hopToken?: string;
}

/** Where a project's app is reached (its sandbox's address or loopback); `key` is `host:port`. */
export interface EdgeUpstream {
  host: string;
  port: number;
  key: string;
  /**
   * An app behind several addresses (a Swarm service's tasks): the address for one request (each has
   * a keep-alive pool of its own), asked per request; null: `host:port` itself. WebSocket upgrades use
   * `host:port` (the Swarm balancer spreads those per connection).
   */
  pick?: () => EdgeUpstream | null;
  /** With `pick`: every address it picks from now (the threaded edge caches these and picks itself). */
  lanes?: () => EdgeUpstream[];
}
