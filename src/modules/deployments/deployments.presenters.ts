import { Type } from '@sinclair/typebox';

/**
 * The deployments area's answers as TypeBox schemas (the server serialises each route's `data` by
 * them). The deployment record itself is the projects area's (`DeploymentSchema`: one shape for the
 * project's list and these routes).
 */
export { DeploymentSchema, deploymentRecord, type DeploymentRecord } from '../projects/index.js';

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

/** One request the edge served for a project (the path without its query). */
export const RequestEntrySchema = Type.Object({
  ts: Type.String(),
  method: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  durationMs: Type.Number(),
  ip: Type.String(),
  bytes: Type.Integer(),
});

/** Server-Sent Events: what the stream routes produce. */
export const EVENT_STREAM = 'text/event-stream';

/** DELETE a preview environment: which one went. */
export const EnvironmentDeletedSchema = Type.Object({
  name: Type.String(),
  deleted: Type.Literal(true),
});
