/**
 * TypeBox schemas of the uploads routes' success payloads (the `data` of `{ data }`): the server
 * serialises each answer by its schema, so a field not listed here is not sent.
 */
import { Type } from '@sinclair/typebox';
import { NullableNum, NullableStr } from '../../http/schemas.js';


/** Step 1's answer: where and how to send the tarball (the header carries the session's upload token). */
export const SessionSchema = Type.Object({
  sessionId: Type.String(),
  url: Type.String(),
  method: Type.Literal('POST'),
  headers: Type.Record(Type.String(), Type.String()),
  expiresAt: Type.String(),
  maxBytes: Type.Integer(),
});

export const UploadSchema = Type.Object({
  sessionId: Type.String(),
  status: Type.Literal('uploaded'),
  sizeBytes: Type.Integer(),
  sha256: Type.String(),
  files: Type.Integer(),
  directories: Type.Integer(),
  skipped: Type.Array(Type.Object({ path: Type.String(), type: Type.String() })),
  expiresAt: Type.String(),
});

/** The build plan of contract section 11. */
export const PlanSchema = Type.Object({
  runtime: Type.String(),
  version: Type.Optional(Type.String()),
  install: Type.Array(Type.String()),
  build: Type.Array(Type.String()),
  start: Type.Optional(Type.String()),
  static: Type.Optional(Type.Object({ outputDirectory: Type.String(), spa: Type.Boolean() })),
  variables: Type.Optional(Type.Record(Type.String(), Type.String())),
  /** What detection ignored and why (an invalid berth.json field, naming the file and the field). */
  notes: Type.Optional(Type.Array(Type.String())),
});

const detectedAppFields = {
  rootDirectory: Type.String(),
  name: NullableStr(),
  runtime: Type.String(),
  framework: NullableStr(),
  packageManager: NullableStr(),
  installCommand: NullableStr(),
  buildCommand: NullableStr(),
  startCommand: NullableStr(),
  outputDirectory: NullableStr(),
  port: NullableNum(),
  plan: PlanSchema,
};

const scanFields = {
  ...detectedAppFields,
  monorepo: NullableStr(),
  apps: Type.Array(Type.Object(detectedAppFields)),
};

/** The detected build config of a folder (and of each app of a workspace). */
export const ScanSchema = Type.Object(scanFields);

/** A local folder's scan names the real path it read. */
export const LocalScanSchema = Type.Object({ path: Type.String(), ...scanFields });
