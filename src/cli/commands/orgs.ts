import os from 'node:os';
import type { Command } from 'commander';
import { answer, apiClient, readClientConfig, savedClient, writeClientConfig, type Answered, type ApiClient } from '../client.js';
import { action, note, printJson, printTable } from '../output.js';

type Org = Answered<'/api/auth/me', 'get'>['orgs'][number];

/** The org `ref` names among the user's: by id, else by name (exactly, then ignoring case). */
function pickOrg(orgs: Org[], ref: string): Org {
  const byId = orgs.find((o) => o.id === ref);
  if (byId) return byId;
  for (const same of [(o: Org) => o.name === ref, (o: Org) => o.name.toLowerCase() === ref.toLowerCase()]) {
    const hits = orgs.filter(same);
    if (hits.length === 1) return hits[0]!;
    if (hits.length > 1) throw new Error(`several of your orgs are named "${ref}": name one by id (${hits.map((o) => o.id).join(', ')})`);
  }
  throw new Error(`you are not a member of an org "${ref}" (by id or name): \`berth orgs\` lists yours`);
}

/** The org a token acts in, or null when the token no longer works. */
async function orgOfToken(client: ApiClient): Promise<string | null> {
  try {
    const me = await answer(client.api.GET('/api/auth/me'));
    return me.org?.id ?? null;
  } catch {
    return null;
  }
}

/** `berth orgs`, `berth switch ORG`. */
export function registerOrgCommands(program: Command): void {
  program
    .command('orgs')
    .description('list your orgs, marking the active one (the one your token acts in)')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { json?: boolean }) => {
        const me = await answer(savedClient().api.GET('/api/auth/me'));
        const orgs = me.orgs.map((o) => ({ ...o, active: o.id === me.org?.id }));
        if (opts.json) return printJson(orgs);
        printTable([['', 'ID', 'NAME', 'ROLE', 'KIND'], ...orgs.map((o) => [o.active ? '*' : '', o.id, o.name, o.role, o.isTeam ? 'team' : 'personal'])]);
      }),
    );

  program
    .command('switch <org>')
    .description('act in another of your orgs (by id or name): stores a token for it, reusing the one saved for it while it works')
    .option('--json', 'print JSON: the active org')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const me = await answer(client.api.GET('/api/auth/me'));
        const target = pickOrg(me.orgs, ref);
        const cfg = readClientConfig();
        const server = client.server;
        const orgTokens = { ...(cfg.orgTokens ?? {}) };
        // The saved login's token is kept for its org, so switching back needs no new token. A
        // BERTH_TOKEN from the environment is never written to disk.
        const fromEnv = !!process.env.BERTH_TOKEN;
        if (!fromEnv && cfg.token && me.org) orgTokens[me.org.id] = { server, token: cfg.token };

        let token: string | undefined;
        if (target.id === me.org?.id && !fromEnv) token = cfg.token;
        const saved = orgTokens[target.id];
        if (!token && saved && saved.server === server && (await orgOfToken(apiClient(server, saved.token))) === target.id) token = saved.token;
        if (!token) {
          const name = `cli on ${os.hostname()} (${target.name})`.slice(0, 100);
          // Bound to the target org by the server (a member org of the user, else 404 naming orgId).
          token = (await answer(client.api.POST('/api/auth/tokens', { body: { name, orgId: target.id } }))).token;
        }
        orgTokens[target.id] = { server, token };
        writeClientConfig({ ...cfg, server, token, orgTokens });
        if (fromEnv) note('note: BERTH_TOKEN is set and is used instead of the saved token until you unset it');
        if (opts.json) return printJson({ ...target, active: true });
        console.log(`now acting in ${target.name} (${target.id}) as ${target.role}`);
      }),
    );
}
