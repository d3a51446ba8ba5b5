/**
 * The port the certificates area offers (contract section 14), declared here on src/ports.ts's `Ports`:
 * what the edge's TLS listener and HTTP-01 answers read, what the projects area calls when a domain is
 * verified or removed.
 */
import type { AppContext } from '../../context.js';

declare module '../../ports.js' {
  interface Ports {
    /** Certificates of verified domains (certificates area): what the edge's TLS listener and HTTP-01 answers read. */
    certificates: CertificatesPort | null;
  }
}

export interface CertificatesPort {
  /**
   * The certificate (PEM chain) and key for a TLS server name: the domain's own, else a wildcard
   * `*.<parent>` one, else the free domains' wildcard files; null when there is none. Served from a
   * per-server cache that `invalidate` (and a change on any instance) refreshes.
   */
  forServerName(name: string): Promise<{ cert: string; key: string } | null>;
  /** The key authorization of a pending HTTP-01 challenge token (any instance's order), or null. */
  http01(token: string): Promise<string | null>;
  /**
   * The TLS-ALPN-01 challenge certificate and key (RFC 8737) of a name with a pending challenge (any
   * instance's order), or null: what the edge's TLS listener answers an `acme-tls/1` handshake with.
   */
  tlsAlpn01?(name: string): Promise<{ cert: string; key: string } | null>;
  /** A domain became verified (or was added verified): request its certificate in the background. */
  requested(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void>;
  /** A project's domain was removed: its certificate goes (the scheduler's sweep also removes leftovers). */
  removed?(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void>;
  /** The `tls` of the org's domains in the domain answers (contract section 14), by domain; `none` when absent. */
  tls?(ctx: AppContext, orgId: string, domains: readonly string[]): Promise<Map<string, DomainTls>>;
  /** Drops what this server cached for `domain` (after it got a new certificate). */
  invalidate?(domain: string): void;
  /** Calls `fn` after every `invalidate` (the threaded edge drops the certificates it keeps); answers the unsubscribe. */
  onInvalidate?(fn: () => void): () => void;
}

/** A domain's certificate as the domain answers show it. */
export interface DomainTls {
  status: 'none' | 'pending' | 'issued' | 'failed';
  expiresAt?: string;
  issuer?: string;
  error?: string;
}
