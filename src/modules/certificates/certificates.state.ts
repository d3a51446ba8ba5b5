import type { DnsProvider } from '../../edge/acme/dns-providers.js';

/**
 * The certificates area's per-server state (`ctx.state.certificates`, made by its module): the DNS-01
 * provider once first asked for (it caches zones), and the ACME directories' `renewalInfo` URLs read.
 */
export interface CertificatesState {
  /** Made on first use from the configuration (`dnsProviderFor`); undefined until then. */
  dns: DnsProvider | undefined;
  /** Each directory URL's `renewalInfo` (null: no ARI) and when it was read (`renewalInfoUrl`). */
  directories: Map<string, { renewalInfo: string | null; at: number }>;
}

declare module '../../state.js' {
  interface AreaState {
    certificates: CertificatesState;
  }
}

export function createCertificatesState(): CertificatesState {
  return { dns: undefined, directories: new Map() };
}
