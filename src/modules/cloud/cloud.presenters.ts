import { Type } from '@sinclair/typebox';
import { BundleSchema } from './bundle.schema.js';

/** The cloud area's answers as TypeBox schemas (the server serialises each route's `data` by them). */

/** Names and counts of what a transfer moved (never values). */
export const BundleSummarySchema = Type.Object({
  envVars: Type.Integer(),
  secrets: Type.Integer(),
  domains: Type.Array(Type.String()),
  routeRules: Type.Integer(),
  services: Type.Array(Type.String()),
  /** The managed services whose definitions moved (each made anew there, with its own credentials). */
  managedServices: Type.Array(Type.String()),
  environments: Type.Array(Type.String()),
  /** With `includeData`: the managed services whose native dump moved and was loaded there. */
  serviceData: Type.Optional(Type.Array(Type.String())),
});

export const TransferResultSchema = Type.Object({
  id: Type.String(),
  location: Type.Union([Type.Literal('local'), Type.Literal('cloud')]),
  cloudProjectId: Type.String(),
  transferred: BundleSummarySchema,
  verified: Type.Literal(true),
  /** to-self-hosted: whether the cloud copy was deleted after the local one was verified. */
  cloudCopyDeleted: Type.Optional(Type.Boolean()),
});

/** A transfer run in the background (transfer-progress.ts). */
export const TransferRecordSchema = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  direction: Type.Union([Type.Literal('to-cloud'), Type.Literal('to-self-hosted')]),
  status: Type.Union([Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]),
  progress: Type.Union([
    Type.Object({ phase: Type.Union([Type.Literal('dump'), Type.Literal('send'), Type.Literal('receive'), Type.Literal('load')]), service: Type.String(), bytes: Type.Integer(), totalBytes: Type.Optional(Type.Integer()) }),
    Type.Null(),
  ]),
  result: Type.Union([TransferResultSchema, Type.Null()]),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String(), field: Type.Optional(Type.String()) }), Type.Null()]),
  startedAt: Type.String(),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
});

export const ImportedProjectSchema = Type.Object({ id: Type.String(), slug: Type.String() });

/** A bundle whose secret values are sealed to the caller's one-time X25519 key (seal.ts). */
export const SealedBundleSchema = Type.Object({
  bundle: BundleSchema,
  sealing: Type.Object({
    alg: Type.Literal('X25519-HKDF-SHA256-A256GCM'),
    senderKey: Type.String(),
    recipientKey: Type.String(),
  }),
});

export const SourceArchiveSchema = Type.Object({ sha256: Type.String(), sizeBytes: Type.Integer() });

export const ServiceDataSchema = Type.Object({ name: Type.String(), sha256: Type.String(), sizeBytes: Type.Integer() });

export const RecordProjectSchema = Type.Object({ projectId: Type.String() });

/** What `GET /api/projects/:id/source-archive` sends. */
export const GZIP = 'application/gzip';
