import { Type, type Static } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { Nullable } from '../../http/schemas.js';
import { GitRepositorySchema } from '../projects/index.js';

/**
 * The git provider's API shapes (contract section 7): the TypeBox schema of each route's `data`, and
 * the mappings from GitHub's REST JSON to them. Responses are serialised by these schemas, so a field
 * GitHub sends that is not listed here never reaches a client.
 */

const Source = Type.Union([Type.Literal('app'), Type.Literal('oauth'), Type.Literal('cli')]);
const State = Type.Union([Type.Literal('connected'), Type.Literal('not_connected')]);

export const AccountSchema = Type.Object({
  login: Type.String(),
  type: Type.String({ description: '`User` or `Organization`' }),
  source: Source,
  installationId: Type.Optional(Type.String()),
});
export type Account = Static<typeof AccountSchema>;

/** A repository: the projects area's GitRepository (what the git port answers) with GitHub's id. */
export const RepoSchema = Type.Object({ id: Type.Number(), ...GitRepositorySchema.properties });
export type Repo = Static<typeof RepoSchema>;

export const BranchSchema = Type.Object({ name: Type.String(), commit: Type.String(), protected: Type.Boolean() });
export type Branch = Static<typeof BranchSchema>;

export const FileEntrySchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: Type.Union([Type.Literal('file'), Type.Literal('dir')]),
  size: Type.Number(),
});
export type FileEntry = Static<typeof FileEntrySchema>;

export const WebhookSchema = Type.Object({ id: Type.Number(), url: Type.String(), events: Type.Array(Type.String()), active: Type.Boolean() });
export type Webhook = Static<typeof WebhookSchema>;

// ---------------------------------------------------------------- one schema per route

export const StatusSchema = Type.Object({
  state: State,
  accounts: Type.Array(AccountSchema),
  installUrl: Nullable(Type.String()),
  cloudUnreachable: Type.Boolean(),
});
export type Status = Static<typeof StatusSchema>;

export const HomeSchema = Type.Object({ state: State, accounts: Type.Array(AccountSchema), repos: Type.Array(RepoSchema) });

export const LocalStatusSchema = Type.Object({
  installed: Type.Boolean(),
  authenticated: Type.Boolean(),
  login: Nullable(Type.String()),
  hostname: Type.String(),
});

export const DevicePollSchema = Type.Object({
  status: Type.Union([Type.Literal('pending'), Type.Literal('connected'), Type.Literal('expired'), Type.Literal('denied')]),
});
export type DevicePollAnswer = Static<typeof DevicePollSchema>;

export const ConnectSchema = Type.Union([
  Type.Object({ connected: Type.Literal(true) }),
  Type.Object({ connected: Type.Literal(false), flow: Type.Literal('redirect'), url: Type.String() }),
  Type.Object({
    connected: Type.Literal(false),
    flow: Type.Literal('device_code'),
    userCode: Type.String(),
    verificationUri: Type.String(),
    expiresIn: Type.Number(),
    interval: Type.Number(),
  }),
  Type.Object({ connected: Type.Literal(false), flow: Type.Literal('terminal'), command: Type.String(), message: Type.String() }),
]);
export type ConnectAnswer = Static<typeof ConnectSchema>;

export const DisconnectSchema = Type.Object({
  source: Type.Union([Type.Literal('oauth'), Type.Literal('cli'), Type.Literal('all')]),
  disconnected: Type.Boolean(),
});

export const RepoWithBranchesSchema = Type.Composite([RepoSchema, Type.Object({ branches: Type.Optional(Type.Array(BranchSchema)) })]);
export const DeletedRepoSchema = Type.Object({ deleted: Type.Boolean(), fullName: Type.String() });

export const CloneTokenSchema = Type.Object({
  token: Type.String(),
  cloneUrl: Type.String(),
  command: Type.String(),
  expiresAt: Type.String(),
  username: Type.String(),
});

export const FileSchema = Type.Object({
  path: Type.String(),
  sha: Type.String(),
  content: Type.Unknown({ description: 'parsed JSON for *.json, text otherwise' }),
});

/** POST webhooks: the hook, and whether an existing one was reused (200) rather than created (201). */
export const RegisteredWebhookSchema = Type.Composite([WebhookSchema, Type.Object({ reused: Type.Boolean() })]);
export const DeletedWebhookSchema = Type.Object({ deleted: Type.Boolean(), hookId: Type.Number() });

/** The inbound delivery's acknowledgement (200 ignored or duplicate, 202 queued). */
export const DeliveryAckSchema = Type.Object({
  received: Type.Boolean(),
  ignored: Type.Optional(Type.Boolean()),
  event: Type.Optional(Type.String()),
  duplicate: Type.Optional(Type.Boolean()),
  queued: Type.Optional(Type.Boolean()),
  redelivered: Type.Optional(Type.Boolean()),
});
export type DeliveryAck = Static<typeof DeliveryAckSchema>;

// ---------------------------------------------------------------- GitHub's JSON -> API shapes

/** The HTTPS clone URL on the configured web base (no credential in it). */
export function cloneUrlOf(ctx: AppContext, owner: string, repo: string): string {
  return `${ctx.config.github.webUrl}/${owner}/${repo}.git`;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function toRepo(ctx: AppContext, r: any): Repo {
  const owner = String(r.owner?.login ?? '');
  return {
    id: Number(r.id),
    owner,
    name: String(r.name),
    fullName: String(r.full_name ?? `${owner}/${r.name}`),
    private: !!r.private,
    defaultBranch: String(r.default_branch ?? 'main'),
    cloneUrl: cloneUrlOf(ctx, owner, String(r.name)),
  };
}

export function toBranch(b: any): Branch {
  return { name: String(b.name), commit: String(b.commit?.sha ?? ''), protected: !!b.protected };
}

export function toFileEntry(x: any): FileEntry {
  return { name: String(x.name), path: String(x.path), type: x.type === 'dir' ? 'dir' : 'file', size: Number(x.size ?? 0) };
}

export function toWebhook(h: any): Webhook {
  return { id: Number(h.id), url: String(h.config?.url ?? ''), events: Array.isArray(h.events) ? h.events.map(String) : [], active: h.active !== false };
}
