import type { Migration } from 'kysely';
import * as m001 from './001_foundation.js';

/**
 * Every migration, in order. Names sort; add new ones at the end with the next number.
 * One set serves both SQLite and PostgreSQL.
 */
export const migrations: Record<string, Migration> = {
  '001_foundation': m001,
};
