import { createRequire } from 'node:module';
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';

// ajv ships CommonJS with a default export; under NodeNext the class sits on `.default`.
const Ajv = AjvModule.default;
import type { FastifyInstance, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';

/**
 * Two Ajv instances: bodies are never type-coerced (`42` is not a string); path and query
 * parameters are (they arrive as strings). Unknown body fields are dropped (removeAdditional with
 * additionalProperties: false on every object schema).
 *
 * Both the validators and the response serialisers are compiled on a route's first request, not at
 * start: compiling the ~160 routes' schemas up front held about 20 MB more RSS after start than the
 * server needs (docs/decisions.md, "Memory"). The function returned compiles them all at once (tests:
 * a schema Ajv or fast-json-stringify refuses fails there, as it failed at start before).
 */
export function installValidators(app: FastifyInstance): () => number {
  const common = { removeAdditional: true as const, useDefaults: true, allErrors: false, strict: false, allowUnionTypes: true };
  let bodyAjv: InstanceType<typeof Ajv> | undefined;
  let paramAjv: InstanceType<typeof Ajv> | undefined;
  const pending: (() => void)[] = [];
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let fn: ValidateFunction | undefined;
    const compile = (): ValidateFunction => {
      const ajv = httpPart === 'body' ? (bodyAjv ??= new Ajv({ ...common, coerceTypes: false })) : (paramAjv ??= new Ajv({ ...common, coerceTypes: 'array' as const }));
      return (fn ??= ajv.compile(schema));
    };
    pending.push(compile);
    return lazyValidator(compile);
  });

  let serializerCompiler: FastifySerializerCompiler<unknown> | undefined;
  app.setSerializerCompiler((route) => {
    let serialize: ((data: unknown) => string) | undefined;
    const compile = (): ((data: unknown) => string) => (serialize ??= (serializerCompiler ??= defaultSerializerCompiler())(route));
    pending.push(compile);
    return (data: unknown) => (serialize ?? compile())(data);
  });
  // Compiles every route's validators and serialisers now and says how many (`app.berth.compileAllSchemas`).
  return () => {
    for (const compile of pending) compile();
    return pending.length;
  };
}

/**
 * A validator that compiles its schema on first call. Fastify reads `errors` after a `false` and
 * passes the parent object when the function has `schemaEnv` (so that Ajv can replace a coerced
 * root value), as it does with Ajv's own functions.
 */
function lazyValidator(compile: () => ValidateFunction): ReturnType<FastifySchemaCompiler<unknown>> {
  const v = Object.assign(
    (data: unknown, ctx?: { parentData: object; parentDataProperty: string }) => {
      const fn = compile();
      const ok = ctx ? fn(data, ctx as never) : fn(data);
      v.errors = fn.errors;
      return ok;
    },
    { errors: null as ValidateFunction['errors'], schemaEnv: true },
  );
  return v as never;
}

/**
 * Fastify's own default serialiser compiler (fast-json-stringify), loaded from Fastify's own
 * dependencies so that it is the very one Fastify would have used. Berth adds no shared schemas
 * (`addSchema`) and no `serializerOpts`.
 */
function defaultSerializerCompiler(): FastifySerializerCompiler<unknown> {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const SerializerSelector = fromFastify('@fastify/fast-json-stringify-compiler') as () => (externalSchemas: unknown, options: unknown) => FastifySerializerCompiler<unknown>;
  return SerializerSelector()({}, undefined);
}

/** `/production/cpuCores` (+ a missing property) -> `production.cpuCores`. */
function joinPath(instancePath: string, extra?: string): string | undefined {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) parts.push(extra);
  return parts.length ? parts.join('.') : undefined;
}

/** The dot path of the field an Ajv error is about, and a sentence a person can read. */
export function describeAjvError(err: ErrorObject, part: string | undefined): { field?: string; message: string } {
  const p = err.params as Record<string, unknown>;
  const field = joinPath(err.instancePath, err.keyword === 'required' ? String(p.missingProperty) : undefined);
  const name = field ?? (part === 'querystring' ? 'query' : part ?? 'body');
  switch (err.keyword) {
    case 'required':
      return { field, message: `${name} is required` };
    case 'type': {
      const t = String(p.type);
      const article = /^[aeiou]/.test(t) ? 'an' : 'a';
      return { field, message: `${name} must be ${article} ${t}` };
    }
    case 'maximum':
      return { field, message: `${name} must be at most ${p.limit}` };
    case 'minimum':
      return { field, message: `${name} must be at least ${p.limit}` };
    case 'exclusiveMaximum':
      return { field, message: `${name} must be less than ${p.limit}` };
    case 'exclusiveMinimum':
      return { field, message: `${name} must be greater than ${p.limit}` };
    case 'maxLength':
      return { field, message: `${name} must be at most ${p.limit} characters` };
    case 'minLength':
      return { field, message: Number(p.limit) === 1 ? `${name} must not be empty` : `${name} must be at least ${p.limit} characters` };
    case 'maxItems':
      return { field, message: `${name} must have at most ${p.limit} items` };
    case 'minItems':
      return { field, message: `${name} must have at least ${p.limit} items` };
    case 'enum':
      return { field, message: `${name} must be one of: ${(p.allowedValues as unknown[]).join(', ')}` };
    case 'const':
      return { field, message: `${name} must be ${JSON.stringify(p.allowedValue)}` };
    case 'pattern':
    case 'format':
      return { field, message: `${name} is not valid` };
    case 'multipleOf':
      return { field, message: `${name} must be a multiple of ${p.multipleOf}` };
    case 'anyOf':
    case 'oneOf':
      return { field, message: `${name} does not match any allowed shape` };
    default:
      return { field, message: `${name} ${err.message ?? 'is not valid'}` };
  }
}
