import AjvModule, { type ErrorObject } from 'ajv';

// ajv ships CommonJS with a default export; under NodeNext the class sits on `.default`.
const Ajv = AjvModule.default;
import type { FastifyInstance } from 'fastify';

/**
 * Two Ajv instances: bodies are never type-coerced (`42` is not a string); path and query
 * parameters are (they arrive as strings). Unknown body fields are dropped (removeAdditional with
 * additionalProperties: false on every object schema).
 */
export function installValidators(app: FastifyInstance): void {
  const common = { removeAdditional: true as const, useDefaults: true, allErrors: false, strict: false, allowUnionTypes: true };
  const bodyAjv = new Ajv({ ...common, coerceTypes: false });
  const paramAjv = new Ajv({ ...common, coerceTypes: 'array' as const });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
    return ajv.compile(schema) as never;
  });
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
