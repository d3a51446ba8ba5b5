/** The API shapes of the services area (TypeBox): what the routes declare and serialise. */
import { Type } from '@sinclair/typebox';
import { Id, Nullable, Obj, Str } from '../../http/schemas.js';

const OneOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });

const KINDS = ['postgres', 'mysql', 'redis', 'mongodb'] as const;

export const ResourcesSchema = Type.Object({ cpuCores: Type.Number(), memoryMb: Type.Integer(), diskMb: Type.Integer() });

/** Contract section 19's record (attached databases and the data volume: `managed: false`, nulls). Credentials are never in it. */
export const ServiceSchema = Type.Object({
  id: Type.String(),
  kind: OneOf(['volume', ...KINDS] as const),
  name: Type.String(),
  version: Nullable(Type.String()),
  managed: Type.Boolean(),
  status: Type.Union([OneOf(['starting', 'running', 'stopped', 'failed'] as const), Type.Null()]),
  resources: Nullable(ResourcesSchema),
  internalHost: Nullable(Type.String()),
  port: Nullable(Type.Integer()),
  createdAt: Type.String(),
  error: Type.Optional(Type.String()),
  /** Managed: `production`, or the preview environment whose own instance it is. */
  environment: Type.Optional(Type.String()),
  /** Managed, production's: what previews' own instances start with (null: empty; `production`: its last succeeded backup). */
  seedFrom: Type.Optional(Type.Union([OneOf(['production'] as const), Type.Null()])),
});

const KindOfferSchema = Type.Object({
  kind: OneOf(KINDS),
  engine: Type.String(),
  versions: Type.Array(Type.String()),
  defaultVersion: Type.String(),
  port: Type.Integer(),
  /** The image it runs from (docker runtime: BERTH_IMAGE_POSTGRES, ...). */
  image: Type.Optional(Type.String()),
});

export const KindsSchema = Type.Object({
  /** The runtime this server runs services on. */
  runtime: OneOf(['sandbox', 'process', 'docker'] as const),
  runtimes: Type.Array(
    Type.Object({
      runtime: OneOf(['sandbox', 'process', 'docker'] as const),
      kinds: Type.Array(KindOfferSchema),
      unavailable: Type.Array(Type.Object({ kind: OneOf(KINDS), reason: Type.String() })),
    }),
  ),
});

export const CredentialsSchema = Type.Object({
  username: Type.String(),
  password: Type.String(),
  database: Type.String(),
  host: Nullable(Type.String()),
  port: Type.Integer(),
  url: Nullable(Type.String()),
});

export const DeletedServiceSchema = Type.Object({ id: Type.String(), deleted: Type.Literal(true), keptVolume: Type.Boolean() });

const ResourcesBody = Obj({
  cpuCores: Type.Optional(Type.Number({ minimum: 0.1, maximum: 4 })),
  memoryMb: Type.Optional(Type.Integer({ minimum: 64, maximum: 16384 })),
  diskMb: Type.Optional(Type.Integer({ minimum: 128, maximum: 1048576 })),
});

export const ServiceParams = Obj({ id: Id, sid: Id });

/** What a preview environment's own instance starts with: `production` (its last succeeded backup) or null (empty). */
const SeedFromBody = Type.Union([OneOf(['production'] as const), Type.Null()]);

export const CreateServiceBody = Obj({
  kind: OneOf(KINDS),
  name: Str({ min: 1, max: 63 }),
  version: Type.Optional(Str({ min: 1, max: 32 })),
  /** Attaches an outside PostgreSQL instead (kind `postgres`); stored encrypted, never returned. */
  connectionUrl: Type.Optional(Str({ min: 1, max: 2048 })),
  resources: Type.Optional(ResourcesBody),
  seedFrom: Type.Optional(SeedFromBody),
});

export const PatchServiceBody = Obj({ resources: Type.Optional(ResourcesBody), stopped: Type.Optional(Type.Boolean()), seedFrom: Type.Optional(SeedFromBody) }, { minProperties: 1 });

export const ListServicesQuery = Obj({ environment: Type.Optional(Str({ min: 1, max: 63 })) });

export const DeleteServiceQuery = Obj({ keepVolume: Type.Optional(Type.Boolean()) });

export const LogsQuery = Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })) });

export const LogStreamQuery = Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })), follow: Type.Optional(Type.Boolean()) });

export const LogLinesSchema = Type.Array(Type.Object({ line: Type.String() }));
