/**
 * TypeBox schemas of the project config routes' success payloads (env, git, clone credential,
 * resources, services, route rules): the server serialises each answer by its schema, so a field not
 * listed here is not sent. The records themselves are built by their services.
 */
import { Type } from '@sinclair/typebox';
import { NullableStr } from '../../http/schemas.js';
import { OneOf } from './projects.presenters.js';

export const EnvVarSchema = Type.Object({
  key: Type.String(),
  /** Masked (`********`) when the variable is secret. */
  value: Type.String(),
  isSecret: Type.Boolean(),
  environment: Type.String(),
  updatedAt: Type.String(),
});

export const CloneTokenSchema = Type.Object({
  configured: Type.Boolean(),
  username: NullableStr(),
  /** Always masked. */
  token: NullableStr(),
  updatedAt: NullableStr(),
});

export const GitRepositorySchema = Type.Object({
  owner: Type.String(),
  name: Type.String(),
  fullName: Type.String(),
  private: Type.Boolean(),
  defaultBranch: Type.String(),
  cloneUrl: Type.String(),
});

export const GitInfoSchema = Type.Object({
  linked: Type.Boolean(),
  provider: NullableStr(),
  owner: NullableStr(),
  repo: NullableStr(),
  branch: NullableStr(),
  autoDeploy: Type.Boolean(),
  webhookDomain: NullableStr(),
  webhookUrl: Type.String(),
  /** Set while the git provider has paused auto-deploy or unlinked the repository. */
  notice: Type.Optional(Type.Union([Type.Object({ reason: Type.String(), at: Type.String() }), Type.Null()])),
  repository: Type.Union([GitRepositorySchema, Type.Null()]),
});

export const GitBranchSchema = Type.Object({ name: Type.String(), commit: Type.String(), protected: Type.Boolean() });

export const CommitStatusSchema = Type.Object({
  branch: Type.String(),
  deployedCommit: NullableStr(),
  remoteCommit: NullableStr(),
  upToDate: Type.Boolean(),
});

export const AutoDeploySchema = Type.Object({ autoDeploy: Type.Boolean(), webhookUrl: Type.String(), webhookId: NullableStr() });

export const WebhookDomainSchema = Type.Object({ webhookDomain: NullableStr(), webhookUrl: Type.String() });

const LimitsSchema = Type.Object({ cpuCores: Type.Number(), memoryMb: Type.Number(), diskMb: Type.Number() });

export const ResourcesSchema = Type.Object({
  /** `replicas`: the tasks of the app's Swarm service (docker runtime with BERTH_DOCKER_SWARM=1; 1 elsewhere). */
  production: Type.Object({ cpuCores: Type.Number(), memoryMb: Type.Number(), diskMb: Type.Number(), replicas: Type.Integer() }),
  build: LimitsSchema,
  sleepMode: OneOf(['auto_sleep', 'always_on'] as const),
  port: Type.Integer(),
});

/** A route rule: the common fields and those of its kind (rate-limit: limit, windowSeconds; ban: ips, expiresAt; allow-deny: action, cidrs). */
export const RouteRuleSchema = Type.Object({
  id: Type.String(),
  kind: OneOf(['rate-limit', 'ban', 'allow-deny'] as const),
  enabled: Type.Boolean(),
  path: NullableStr(),
  limit: Type.Optional(Type.Integer()),
  windowSeconds: Type.Optional(Type.Integer()),
  ips: Type.Optional(Type.Array(Type.String())),
  expiresAt: Type.Optional(NullableStr()),
  action: Type.Optional(OneOf(['allow', 'deny'] as const)),
  cidrs: Type.Optional(Type.Array(Type.String())),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const DeletedSchema = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });
