import { Type, type Static } from '@sinclair/typebox';
import { Obj, Str } from '../../http/schemas.js';
import { projectEnv } from '../projects/index.js';

/**
 * A project bundle: everything a transfer moves (config, source, env with secret values, domains,
 * route rules, resources, services, managed services' definitions, clone credential). In clear it only ever lives in memory; on
 * the wire to the cloud it rides in the body of `POST /api/projects/import-bundle` (like an env
 * PATCH, over the link's TLS); from the cloud every secret value is sealed to a one-time key of the
 * requesting instance (see sealBundle).
 */
const NStr = (max = 1024) => Type.Union([Str({ max }), Type.Null()]);

export const BundleSchema = Obj({
  version: Type.Literal(1),
  project: Obj({
    id: Str({ max: 64 }),
    name: Str({ min: 1, max: 200 }),
    slug: Str({ min: 1, max: 63, pattern: '^[a-z0-9][a-z0-9-]*$' }),
    status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
    config: Obj({
      framework: NStr(64),
      installCommand: NStr(4096),
      buildCommand: NStr(4096),
      startCommand: NStr(4096),
      outputDirectory: NStr(1024),
      rootDirectory: NStr(1024),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      packageManager: NStr(64),
      runtime: NStr(64),
      nodeVersion: NStr(64),
    }),
    source: Obj({
      type: Type.Union([Type.Literal('git'), Type.Literal('upload'), Type.Literal('none')]),
      gitProvider: NStr(64),
      gitOwner: NStr(100),
      gitRepo: NStr(200),
      gitBranch: NStr(255),
    }),
    sleepMode: Type.Union([Type.Literal('auto_sleep'), Type.Literal('always_on')]),
    autoDeploy: Type.Boolean(),
    webhookDomain: NStr(253),
    resources: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 }),
  }),
  environments: Type.Array(Obj({ name: Str({ min: 1, max: 64 }), type: Type.Union([Type.Literal('production'), Type.Literal('preview')]), branch: NStr(255) }), {
    maxItems: 100,
  }),
  env: Type.Array(
    Obj({
      environment: Str({ min: 1, max: 64 }),
      key: Str({ min: 1, max: 256, pattern: projectEnv.ENV_KEY_RE.source }),
      value: Str({ max: 128 * 1024 }),
      isSecret: Type.Boolean(),
    }),
    { maxItems: 20_000 },
  ),
  domains: Type.Array(Obj({ domain: Str({ min: 1, max: 253 }), primary: Type.Boolean() }), { maxItems: 500 }),
  routeRules: Type.Array(
    Obj({
      kind: Type.Union([Type.Literal('rate-limit'), Type.Literal('ban'), Type.Literal('allow-deny')]),
      enabled: Type.Boolean(),
      path: NStr(1024),
      config: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 }),
      createdAt: Str({ max: 40 }),
    }),
    { maxItems: 1000 },
  ),
  services: Type.Array(
    Obj({ kind: Type.Union([Type.Literal('volume'), Type.Literal('postgres')]), name: Str({ min: 1, max: 64 }), connectionUrl: NStr(4096) }),
    { maxItems: 100 },
  ),
  /**
   * The project's managed services (production's): definitions only. Their credentials never travel:
   * the receiving side generates its own (docs/decisions.md); their data moves with `includeData`.
   */
  managedServices: Type.Optional(
    Type.Array(
      Obj({
        name: Str({ min: 1, max: 63, pattern: '^[a-z][a-z0-9_-]*$' }),
        kind: Type.Union([Type.Literal('postgres'), Type.Literal('mysql'), Type.Literal('redis'), Type.Literal('mongodb')]),
        version: Str({ min: 1, max: 64 }),
        resources: Obj({ cpuCores: Type.Number({ minimum: 0.1, maximum: 4 }), memoryMb: Type.Integer({ minimum: 64, maximum: 16384 }), diskMb: Type.Integer({ minimum: 128, maximum: 1048576 }) }),
        seedFrom: Type.Union([Type.Literal('production'), Type.Null()]),
        stopped: Type.Boolean(),
        createdAt: Str({ min: 1, max: 40 }),
      }),
      { maxItems: 100 },
    ),
  ),
  cloneCredential: Type.Union([Obj({ username: NStr(255), token: Str({ min: 1, max: 4096 }) }), Type.Null()]),
  /** The uploaded source archive's hash and size; the archive itself moves separately (source-archive routes). */
  sourceArchive: Type.Optional(Type.Union([Obj({ sha256: Str({ min: 64, max: 64, pattern: '^[0-9a-f]{64}$' }), sizeBytes: Type.Integer({ minimum: 0 }) }), Type.Null()])),
});
export type Bundle = Static<typeof BundleSchema>;

