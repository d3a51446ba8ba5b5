import { Option, type Command } from 'commander';
import { answer, savedClient, type Answered, type ApiClient, type RequestBody } from '../client.js';
import { lookupProject } from '../link.js';
import { action, printJson, printTable, UsageError } from '../output.js';
import { age } from './shared.js';

/**
 * `berth members ls|invite|rm`, `berth invitations ls|revoke` (docs/permissions.md): the team of the
 * org the token acts in, through the owner/admin routes of `/api/permissions`.
 */

type Member = Answered<'/api/permissions/members', 'get'>[number];
type Invitation = Answered<'/api/permissions/invitations', 'get'>[number];
/** One grant of an invitation, as `--grant` names it. */
type GrantEntry = Required<NonNullable<RequestBody<'/api/permissions/invite-with-grants', 'post'>['grants']>[number]>;

const LEVELS = ['read', 'write', 'admin'];
const ROLES = ['owner', 'admin', 'member', 'restricted'];

/**
 * One `--grant TYPE:ID:LEVELS` (`project:shop:read,write`, `project:*:read`): a project is named by
 * id, slug or name and sent as its id; other types pass their id as written. Usage errors name the part.
 */
export async function parseGrant(client: ApiClient, spec: string): Promise<GrantEntry> {
  const first = spec.indexOf(':');
  const last = spec.lastIndexOf(':');
  if (first <= 0 || last === first || last === spec.length - 1) throw new UsageError(`--grant takes TYPE:ID:LEVELS, e.g. project:my-app:read,write (got "${spec}")`);
  const resourceType = spec.slice(0, first);
  let resourceId = spec.slice(first + 1, last);
  const permissions = spec.slice(last + 1).split(',').map((l) => l.trim());
  const bad = permissions.find((l) => !LEVELS.includes(l));
  if (bad !== undefined) throw new UsageError(`--grant levels are ${LEVELS.join(', ')} (got "${bad}" in "${spec}")`);
  if (resourceType === 'project' && resourceId !== '*') {
    const hit = await lookupProject(client, resourceId);
    if (!hit) throw new Error(`--grant: no project "${resourceId}" (by id, slug or name) that you can read`);
    resourceId = hit.id;
  }
  return { resourceType, resourceId, permissions };
}

/** A member named by user id or email (case-insensitive). */
async function findMember(client: ApiClient, ref: string): Promise<Member> {
  const members = await answer(client.api.GET('/api/permissions/members'));
  const hit = members.find((m) => m.userId === ref) ?? members.find((m) => m.email.toLowerCase() === ref.toLowerCase());
  if (!hit) throw new Error(`no member "${ref}" (by user id or email) in this org: \`berth members ls\` lists them`);
  return hit;
}

/** An invitation named by id, or by email when one unanswered invitation has it. */
async function findInvitation(client: ApiClient, ref: string): Promise<Invitation> {
  const open = await answer(client.api.GET('/api/permissions/invitations'));
  const byId = open.find((i) => i.id === ref);
  if (byId) return byId;
  const byEmail = open.filter((i) => i.email.toLowerCase() === ref.toLowerCase());
  if (byEmail.length === 1) return byEmail[0]!;
  if (byEmail.length > 1) throw new Error(`several open invitations for ${ref}: name one by id (${byEmail.map((i) => i.id).join(', ')})`);
  if (ref.startsWith('inv_')) return { id: ref } as Invitation; // not open: the server says why
  throw new Error(`no open invitation "${ref}" (by id or email): \`berth invitations ls\` lists them`);
}

const grantText = (g: { resourceType: string; resourceId: string; permissions: string[] }): string => `${g.resourceType}:${g.resourceId}:${g.permissions.join(',')}`;

// Long on purpose: the CLI's member commands declared one after another (commander's chain); each
// action is a few lines, and the list reads as the command's help.
export function registerMemberCommands(program: Command): void {
  const members = program.command('members').description('the members of your org and their roles (owners and admins)');
  members
    .command('ls')
    .alias('list')
    .description('list the members with their roles')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { json?: boolean }) => {
        const list = await answer(savedClient().api.GET('/api/permissions/members'));
        if (opts.json) return printJson(list);
        printTable([['USER', 'EMAIL', 'NAME', 'ROLE', 'JOINED'], ...list.map((m) => [m.userId, m.email, m.name, m.role, age(m.joinedAt)])]);
      }),
    );

  members
    .command('invite <email>')
    .description('invite someone by email; with --grant they join as restricted and get only what is granted')
    .addOption(new Option('--role <role>', 'the role they join as (default: restricted with --grant, else member)').choices(ROLES))
    .option('--grant <grant>', 'TYPE:ID:LEVELS, e.g. project:my-app:read,write (repeatable; a project by id, slug or name)', (v: string, all: string[] = []) => [...all, v])
    .option('--json', 'print JSON: { id, email, role, pendingGrantCount, link }')
    .action(
      action(async (email: string, opts: { role?: string; grant?: string[]; json?: boolean }) => {
        const client = savedClient();
        const grants: GrantEntry[] = [];
        for (const spec of opts.grant ?? []) grants.push(await parseGrant(client, spec));
        const inv = await answer(
          client.api.POST('/api/permissions/invite-with-grants', {
            body: { email, ...(opts.role ? { role: opts.role } : {}), ...(grants.length ? { grants } : {}) },
          }),
        );
        const link = `${client.server}/invite/${inv.id}`;
        if (opts.json) return printJson({ ...inv, link });
        console.log(`invited ${inv.email} as ${inv.role}${inv.pendingGrantCount ? ` with ${inv.pendingGrantCount} grant${inv.pendingGrantCount === 1 ? '' : 's'}` : ''} (${inv.id})`);
        console.log(`send them this link to accept: ${link}`);
      }),
    );

  members
    .command('rm <member>')
    .alias('remove')
    .description('remove a member (by user id or email) and their grants from the org')
    .option('--json', 'print JSON: { userId, removed }')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const m = await findMember(client, ref);
        const out = await answer(client.api.DELETE('/api/permissions/members/{userId}', { params: { path: { userId: m.userId } } }));
        if (opts.json) return printJson(out);
        console.log(`removed ${m.email} (${m.userId}) from the org`);
      }),
    );

  const invitations = program.command('invitations').description('invitations to your org (owners and admins)');
  invitations
    .command('ls')
    .alias('list')
    .description('list invitations with their grants (default: the unanswered ones)')
    .option('--all', 'every invitation, also accepted, declined, cancelled and expired ones')
    .option('--json', 'print JSON')
    .action(
      action(async (opts: { all?: boolean; json?: boolean }) => {
        const list = await answer(savedClient().api.GET('/api/permissions/invitations', { params: { query: opts.all ? { status: 'all' } : {} } }));
        if (opts.json) return printJson(list);
        if (list.length === 0) return void console.log(opts.all ? 'no invitations' : 'no open invitations');
        printTable([
          ['ID', 'EMAIL', 'ROLE', 'STATUS', 'AGE', 'GRANTS'],
          ...list.map((i) => [i.id, i.email, i.role, i.status, age(i.createdAt), i.pendingGrants.map(grantText).join(' ') || '-']),
        ]);
      }),
    );

  invitations
    .command('revoke <invitation>')
    .alias('cancel')
    .description('cancel an unanswered invitation (by id, or by email)')
    .option('--json', 'print JSON: the invitation')
    .action(
      action(async (ref: string, opts: { json?: boolean }) => {
        const client = savedClient();
        const inv = await findInvitation(client, ref);
        const out = await answer(client.api.POST('/api/permissions/invitations/{id}/cancel', { params: { path: { id: inv.id } } }));
        if (opts.json) return printJson(out);
        console.log(`revoked the invitation of ${out.email} (${out.id}): its link no longer works`);
      }),
    );
}
