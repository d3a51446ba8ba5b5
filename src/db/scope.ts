import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';

/**
 * The org (and project) clause of a store's query, written once:
 *
 *     db.selectFrom('backupPolicies').selectAll().where(inOrg(orgId)).where('id', '=', id)
 *     db.deleteFrom('deployments').where(inProject(orgId, projectId))
 *     db.selectFrom('memberships').innerJoin('users', ...).where(inOrg(orgId, 'memberships'))
 *
 * Each returns an expression-builder callback for Kysely's `.where(...)` (select, update and delete
 * alike) and compiles to the same SQL as the hand-written clauses: `"org_id" = ?`, and with a project
 * `("org_id" = ? and "project_id" = ?)`. Types: the callback only fits a query whose table has the
 * column; without a table name, exactly one table of the query may have it (a join of two org tables
 * must name one, as SQL would call a bare `org_id` ambiguous; so must a correlated subquery inside an
 * org table's query, and a query of a table chosen at run time among several, which the types cannot
 * tell from a join); with a table name (or alias), that table must be in the query and have the
 * column. A mismatch is a compile error, never a runtime one.
 */

/** The tables (names or aliases) of a query whose rows have every column C. */
type TablesWith<DB, TB extends keyof DB, C extends string> = { [T in TB]: [C] extends [keyof DB[T]] ? T : never }[TB];

/** U when it is one name, never when it is a union of several (or none). */
type One<U, All = U> = [U] extends [never] ? never : U extends unknown ? ([All] extends [U] ? U : never) : never;

/** Where a scope clause may go: the one table that has every column Cs, or the named table T that has them. */
type Target<DB, TB extends keyof DB, C extends string, T extends string | undefined> = T extends string ? TB & T & TablesWith<DB, TB, C> : TB & One<TablesWith<DB, TB, C>>;

/** `.where(...)` callback of a scope; its table set collapses to never when the scope does not fit the query. */
export type ScopeClause<C extends string, T extends string | undefined> = <DB, TB extends keyof DB>(eb: ExpressionBuilder<DB, Target<DB, TB, C, T>>) => Expression<SqlBool>;

function column(table: string | undefined, name: string): never {
  // The types above checked the column against the query; Kysely's own parameter types cannot see that.
  return (table ? `${table}.${name}` : name) as never;
}

/** `org_id = orgId`, of the query's one org table or of `table`. */
export function inOrg<T extends string | undefined = undefined>(orgId: string, table?: T): ScopeClause<'orgId', T> {
  return (eb) => eb(column(table, 'orgId'), '=', orgId as never);
}

/** `org_id = orgId and project_id = projectId`, of the query's one project-scoped table or of `table`. */
export function inProject<T extends string | undefined = undefined>(orgId: string, projectId: string, table?: T): ScopeClause<'orgId' | 'projectId', T> {
  return (eb) => eb.and([eb(column(table, 'orgId'), '=', orgId as never), eb(column(table, 'projectId'), '=', projectId as never)]);
}
