import type { KyselyPlugin, OperationNode, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';

type Listener = (table: string) => void;

/** The table a node names (`TableNode`, possibly under an alias), as written in the query. */
function tableName(node: OperationNode | undefined): string | null {
  if (!node) return null;
  const n = node as unknown as { kind: string; table?: { identifier?: { name?: string } }; node?: OperationNode };
  if (n.kind === 'TableNode') return n.table?.identifier?.name ?? null;
  if (n.kind === 'AliasNode') return tableName(n.node);
  return null;
}

function writtenTables(node: RootOperationNode): string[] {
  const n = node as unknown as { kind: string; into?: OperationNode; table?: OperationNode; from?: { froms?: OperationNode[] } };
  if (n.kind === 'InsertQueryNode') return [tableName(n.into)].filter((t): t is string => !!t);
  if (n.kind === 'UpdateQueryNode') return [tableName(n.table)].filter((t): t is string => !!t);
  if (n.kind === 'DeleteQueryNode') return (n.from?.froms ?? []).map(tableName).filter((t): t is string => !!t);
  return [];
}

const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Tells listeners which tables a query builder writes (insert, update, delete), when the query is
 * compiled: before it runs, so a listener that drops a cache entry cannot be overtaken by the write.
 * Raw `sql` text and precompiled queries are not seen: the areas that keep read caches write their
 * tables through the query builder (`test/architecture/tables.test.ts` names which area writes which).
 * Table names are reported in camelCase, as the code writes them.
 */
export class WriteEvents implements KyselyPlugin {
  private readonly listeners = new Map<string, Set<Listener>>();

  /** Calls `fn` whenever a query writing one of `tables` is compiled; answers the function that stops it. */
  on(tables: string[], fn: Listener): () => void {
    for (const t of tables) {
      if (!this.listeners.has(t)) this.listeners.set(t, new Set());
      this.listeners.get(t)!.add(fn);
    }
    return () => {
      for (const t of tables) this.listeners.get(t)?.delete(fn);
    };
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.listeners.size) {
      for (const raw of writtenTables(args.node)) {
        const t = camel(raw);
        for (const fn of this.listeners.get(t) ?? []) fn(t);
      }
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
