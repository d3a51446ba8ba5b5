import { createRequire } from 'node:module';
import type * as K from 'kysely';

/**
 * Kysely's CommonJS build: its ESM build is some 490 module files, and each ESM module costs more
 * resident memory than a CommonJS one (about 19 MB against 13 MB for the whole package, measured on
 * Node 20). Values come from here; types may still be imported from 'kysely' directly.
 */
const kysely = createRequire(import.meta.url)('kysely') as typeof K;

export const { CamelCasePlugin, Kysely, Migrator, PostgresDialect, SqliteDialect, sql } = kysely;
export type Kysely<DB> = K.Kysely<DB>;
