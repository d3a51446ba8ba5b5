import { Type, type ObjectOptions, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';

/** An object schema that drops unknown fields (Ajv removeAdditional with additionalProperties: false). */
export function Obj<T extends TProperties>(props: T, opts: ObjectOptions = {}) {
  return Type.Object(props, { additionalProperties: false, ...opts });
}

/** A bounded string (every string input has a maximum length). */
export function Str(opts: { min?: number; max?: number; pattern?: string; format?: string; description?: string } = {}) {
  return Type.String({ minLength: opts.min, maxLength: opts.max ?? 1024, pattern: opts.pattern, format: opts.format, description: opts.description });
}

export const Id = Type.String({ minLength: 1, maxLength: 64 });
export const IdParams = Obj({ id: Id });

export function Nullable<T extends TSchema>(t: T) {
  return Type.Union([t, Type.Null()]);
}

/** A string or null as one JSON-schema type list (serialised without trying the branches of a union). */
export const NullableStr = () => Type.Unsafe<string | null>({ type: ['string', 'null'] });
/**
 * An object or null as one JSON-schema type list: the serialiser writes `null` or the object, where a
 * union (`Nullable`) runs a validator over the value on every answer to pick its branch. For objects
 * in the answers of hot reads (`me`).
 */
export function NullableObject<T extends TObject>(t: T) {
  return Type.Unsafe<Static<T> | null>({ ...t, type: ['object', 'null'] });
}
/** A number or null, as `NullableStr`. */
export const NullableNum = () => Type.Unsafe<number | null>({ type: ['number', 'null'] });
