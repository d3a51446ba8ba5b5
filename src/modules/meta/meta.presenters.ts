import { Type } from '@sinclair/typebox';

/** The meta area's API shapes. */

export const HealthView = Type.Object({
  status: Type.Literal('ok'),
  mode: Type.String({ description: 'self-hosted or cloud' }),
  version: Type.String(),
  database: Type.String({ description: 'sqlite or postgres' }),
  runtime: Type.Object(
    {
      driver: Type.String(),
      ready: Type.Boolean(),
      reason: Type.Optional(Type.String({ description: 'why it cannot run builds and apps now, naming the fix' })),
      engine: Type.Optional(
        Type.Object(
          {
            reachable: Type.Boolean(),
            version: Type.Optional(Type.String({ description: 'the Docker Engine version, e.g. 20.10.24' })),
            apiVersion: Type.Optional(Type.String({ description: 'the Engine API version, e.g. 1.41' })),
            error: Type.Optional(Type.String({ description: 'why the engine does not answer, naming the fix' })),
            starting: Type.Optional(
              Type.Boolean({ description: 'true just after start while the engine has not answered yet and was only slow (at most 30 s): not yet called unreachable; runtime.reason then starts with "starting"' }),
            ),
          },
          { description: 'the docker driver only: whether the Docker Engine (DOCKER_HOST, else /var/run/docker.sock) answers; probed at most every 5 s, in the background' },
        ),
      ),
      egress: Type.Optional(
        Type.Object(
          {
            ok: Type.Boolean(),
            checkedAt: Type.String({ format: 'date-time' }),
            error: Type.Optional(Type.String({ description: 'what stops boxes reaching out, and the likely cause (docs/runtime.md "Egress on real hosts")' })),
          },
          { description: 'whether builds and apps reach the internet: a periodic check (BERTH_EGRESS_CHECK_SECONDS, default 300) of BERTH_EGRESS_CHECK (default registry.npmjs.org:443), from inside a box under the sandbox runtime; absent until the first check answered' },
        ),
      ),
    },
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
