import type { AppContext } from '../../context.js';
import { CloudflareDnsProvider } from '../../edge/acme/cloudflare.js';
import type { DnsProvider } from '../../edge/acme/dns-providers.js';

/**
 * The DNS-01 provider of the configuration (`BERTH_DNS_PROVIDER`), or null: HTTP-01 and TLS-ALPN-01
 * only, and no free-domain wildcard certificate. One per server (`ctx.state.certificates`: the
 * provider caches zones).
 */
export function dnsProviderFor(ctx: AppContext): DnsProvider | null {
  const { dnsProvider, cloudflareApiToken, cloudflareApiUrl } = ctx.config.https;
  if (dnsProvider !== 'cloudflare' || !cloudflareApiToken) return null;
  const state = ctx.state.certificates;
  state.dns ??= new CloudflareDnsProvider({ apiToken: cloudflareApiToken, baseUrl: cloudflareApiUrl });
  return state.dns;
}

/**
 * The free domains' wildcard this instance keeps a certificate for (`*.<BERTH_APPS_DOMAIN>`), or null:
 * no HTTPS port, no DNS provider, the wildcard files given instead, or an apps domain a public CA
 * cannot certify (a single label such as `localhost`).
 */
export function freeDomainWildcard(ctx: AppContext): string | null {
  const { port, wildcardCertFile } = ctx.config.https;
  if (port === null || wildcardCertFile || !dnsProviderFor(ctx)) return null;
  const apps = ctx.config.appsDomain.toLowerCase().replace(/\.$/, '');
  return apps.includes('.') ? `*.${apps}` : null;
}
