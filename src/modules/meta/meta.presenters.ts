import { Type } from '@sinclair/typebox';

/** The meta area's API shapes. */

export const HealthView = Type.Object({
  status: Type.Literal('ok'),
  mode: Type.String({ description: 'self-hosted or cloud' }),
  version: Type.String(),
  database: Type.String({ description: 'sqlite or postgres' }),
  runtime: Type.Object(
    { driver: Type.String(), ready: Type.Boolean(), reason: Type.Optional(Type.String({ description: 'why it cannot run builds and apps now, naming the fix' })) },
    { description: 'the driver builds and apps run with, and whether it can run them now' },
  ),
  cloud: Type.Object({ linked: Type.Boolean(), reachable: Type.Boolean() }, { description: 'whether this instance is linked to a cloud instance and the link answers (cached 3 s)' }),
});

/** The OpenAPI document itself (answered as the whole body). */
export const OpenApiDocument = Type.Object(
  {
    openapi: Type.String(),
    info: Type.Object({}, { additionalProperties: true }),
    paths: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: true },
);
