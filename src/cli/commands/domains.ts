import type { Command } from 'commander';
import { answer, savedClient, type Answered, type ApiClient } from '../client.js';
import { resolveProject, type ProjectSummary } from '../link.js';
import { action, EXIT_FAILED, note, printJson, printTable } from '../output.js';
import { age } from './shared.js';

/** A project's domain (contract section 12). */
type Domain = Answered<'/api/projects/{id}/domains', 'post'>;

/** The TLS field, shortly, whatever shape the server gives it (a status string or an object with one). */
function tlsOf(tls: unknown): string {
  if (tls == null) return '-';
  if (typeof tls === 'string') return tls;
  if (typeof tls === 'boolean') return tls ? 'yes' : 'no';
  if (typeof tls === 'object') {
    const o = tls as Record<string, unknown>;
    for (const k of ['status', 'state', 'mode']) if (typeof o[k] === 'string') return o[k] as string;
  }
  return JSON.stringify(tls);
}

/** The lines telling what DNS record proves ownership of an unverified domain (on stderr). */
function explainVerification(p: ProjectSummary, d: Domain): void {
  if (d.verified) return;
  const v = d.verification;
  if (!v) return note(`${d.domain} is not verified yet`);
  note(`${d.domain} is not verified yet: create this DNS record, then run \`berth domains verify ${p.slug} ${d.domain}\``);
  note(`  ${v.type ?? 'TXT'}  ${v.name}  "${v.value}"`);
}

function domainsOf(client: ApiClient, p: ProjectSummary): Promise<Domain[]> {
  return answer(client.api.GET('/api/projects/{id}/domains', { params: { path: { id: p.id } } }));
}

/** `berth domains ls|add|rm|verify PROJECT [DOMAIN]`. */
export function registerDomainCommands(program: Command): void {
  const domains = program.command('domains').description("a project's custom domains");

  domains
    .command('ls <project>')
    .alias('list')
    .description("list a project's domains, with what an unverified one needs")
    .option('--json', 'print JSON')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const list = await domainsOf(client, p);
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log(`no custom domains on ${p.slug}${p.routes?.freeDomain ? ` (it is served at ${p.routes.freeDomain})` : ''}`);
        printTable([
          ['DOMAIN', 'PRIMARY', 'VERIFIED', 'TLS', 'AGE'],
          ...list.map((d) => [d.domain, d.primary ? 'yes' : '', d.verified ? 'yes' : 'no', tlsOf(d.tls), age(d.createdAt)]),
        ]);
        for (const d of list) explainVerification(p, d);
      }),
    );

  domains
    .command('add <project> <domain>')
    .description('add a custom domain to a project (prints the DNS record that verifies it, when one is needed)')
    .option('--primary', 'make it the primary domain')
    .option('--json', 'print JSON: the domain')
    .action(
      action(async (ref: string, domain: string, opts: { primary?: boolean; json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const d = await answer(client.api.POST('/api/projects/{id}/domains', { params: { path: { id: p.id } }, body: { domain, ...(opts.primary ? { primary: true } : {}) } }));
        if (opts.json) return printJson(d);
        console.log(`added ${d.domain} to ${p.slug}${d.primary ? ' (primary)' : ''}${d.verified ? '' : ' (not verified yet)'}`);
        explainVerification(p, d);
      }),
    );

  domains
    .command('rm <project> <domain>')
    .alias('remove')
    .description('remove a custom domain from a project')
    .option('--json', 'print JSON: the answer')
    .action(
      action(async (ref: string, domain: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const out = await answer(client.api.DELETE('/api/projects/{id}/domains/{domain}', { params: { path: { id: p.id, domain } } }));
        if (opts.json) return printJson(out ?? { domain, deleted: true });
        console.log(`removed ${domain} from ${p.slug}`);
      }),
    );

  domains
    .command('verify <project> <domain>')
    .description("check a domain's DNS record now; exits 1 while it is not verified")
    .option('--json', 'print JSON: the domain')
    .action(
      action(async (ref: string, domain: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const p = await resolveProject(client, ref);
        const d = await answer(client.api.POST('/api/projects/{id}/domains/{domain}/verify', { params: { path: { id: p.id, domain } } }));
        if (opts.json) printJson(d);
        else if (d.verified) console.log(`${d.domain} is verified`);
        else explainVerification(p, d);
        if (!d.verified) process.exitCode = EXIT_FAILED;
      }),
    );
}
