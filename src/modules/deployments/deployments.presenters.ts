import { Type, type Static } from '@sinclair/typebox';
import { NullableStr } from '../../http/schemas.js';
import type { DeploymentRow } from './deployments.store.js';

/**
 * The deployments area's answers as TypeBox schemas (the server serialises each route's `data` by
 * them). `DeploymentSchema` is one shape for the project's history (GET /api/projects/:id/deployments)
 * and every deployment route.
 */

export const DeploymentSchema = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  environment: Type.String(),
  status: Type.String(),
  trigger: Type.String(),
  commit: NullableStr(),
  ref: NullableStr(),
  createdAt: Type.String(),
  startedAt: NullableStr(),
  finishedAt: NullableStr(),
  error: NullableStr(),
  current: Type.Boolean({ description: 'true on the ready deployment that serves its environment (its current release)' }),
  /** A production deployment promoted from a preview (trigger `promote`): that preview deployment, whose build it runs; else null. */
  promotedFrom: NullableStr(),
});
export type DeploymentRecord = Static<typeof DeploymentSchema>;

export function deploymentRecord(d: DeploymentRow): DeploymentRecord {
  return {
    id: d.id,
    projectId: d.projectId,
    environment: d.environment,
    status: d.status,
    trigger: d.trigger,
    commit: d.commit,
    ref: d.ref,
    createdAt: d.createdAt,
    startedAt: d.startedAt,
    finishedAt: d.finishedAt,
    error: d.error,
    current: Number(d.current) === 1,
    promotedFrom: d.promotedFrom ?? null,
  };
}

/** A stream token as minted: shown once, with when it stops opening streams. */
export const IssuedTokenSchema = Type.Object({
  token: Type.String(),
  expiresAt: Type.String(),
});

/** deployment-session: a build token for the project's latest deployment, and which one it is. */
export const DeploymentSessionSchema = Type.Object({
  token: Type.String(),
  expiresAt: Type.String(),
  deploymentId: Type.String(),
});

/** One line of a build or runtime log. */
export const LogLineSchema = Type.Object({
  ts: Type.String(),
  stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
  line: Type.String(),
});

/** One line of a project's kept logs as search answers it (docs/logs.md). */
export const FoundLineSchema = Type.Object({
  ts: Type.String(),
  source: Type.Union([Type.Literal('runtime'), Type.Literal('build'), Type.Literal('request')], { description: "which log: the app's output, a build's, or the edge's requests" }),
  stream: Type.Optional(Type.Union([Type.Literal('stdout'), Type.Literal('stderr')])),
  line: Type.String({ description: 'for a request: `METHOD PATH STATUS DURATIONms BYTESB IP`' }),
  deploymentId: Type.Optional(Type.String({ description: 'the deployment whose build printed it' })),
});

/** A page of search results beside the envelope's `data`: `{ data: [line], nextCursor }`. */
export const LogPageSchema = Type.Object({
  data: Type.Array(FoundLineSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'pass back as `cursor` for the next (older) page; null: no more' }),
});

/** One request the edge served for a project (the path without its query). */
export const RequestEntrySchema = Type.Object({
  ts: Type.String(),
  method: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  durationMs: Type.Number(),
  ip: Type.String(),
  bytes: Type.Integer(),
  /** With `environment=*` only: the environment whose app served the request. */
  environment: Type.Optional(Type.String()),
});

/** Server-Sent Events: what the stream routes produce. */
export const EVENT_STREAM = 'text/event-stream';

/** DELETE a preview environment: which one went. */
export const EnvironmentDeletedSchema = Type.Object({
  name: Type.String(),
  deleted: Type.Literal(true),
});
