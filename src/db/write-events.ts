import type { KyselyPlugin, OperationNode, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';

type Listener = (table: string) => void;

/** The table a node names (`TableNode`, possibly under an alias), as written in the query. */
function tableName(node: OperationNode | undefined): string | undefined {
  const n = node as { kind: string; table?: { identifier?: { name?: string } }; node?: OperationNode } | undefined;
  if (n?.kind === 'AliasNode') return tableName(n.node);
  return n?.kind === 'TableNode' ? n.table?.identifier?.name : undefined;
}

/** The table nodes an insert, update or delete writes; none for other queries. */
function writtenNodes(node: RootOperationNode): (OperationNode | undefined)[] {
  const n = node as unknown as { kind: string; into?: OperationNode; table?: OperationNode; from?: { froms?: OperationNode[] } };
  if (n.kind === 'InsertQueryNode') return [n.into];
  if (n.kind === 'UpdateQueryNode') return [n.table];
  if (n.kind === 'DeleteQueryNode') return n.from?.froms ?? [];
  return [];
}

/**
 * Tells listeners which tables a query builder writes (insert, update, delete), when the query is
 * compiled: before it runs, so a listener that drops a cache entry cannot be overtaken by the write.
 * Raw `sql` text and precompiled queries are not seen: the areas that keep read caches write their
 * tables through the query builder (`test/architecture/tables.test.ts` names which area writes which).
 * Table names are reported as the code writes them (camelCase): this plugin comes before
 * CamelCasePlugin (`db/client.ts`), so it sees the query as built.
 */
export class WriteEvents implements KyselyPlugin {
  private readonly listeners = new Map<string, Set<Listener>>();

  /** Calls `fn` whenever a query writing one of `tables` is compiled; answers the function that stops it. */
  on(tables: string[], fn: Listener): () => void {
    for (const t of tables) {
      const set = this.listeners.get(t) ?? new Set<Listener>();
      this.listeners.set(t, set.add(fn));
    }
    return () => {
      for (const t of tables) this.listeners.get(t)?.delete(fn);
    };
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.listeners.size) {
      for (const node of writtenNodes(args.node)) {
        const t = tableName(node);
        if (t !== undefined) for (const fn of this.listeners.get(t) ?? []) fn(t);
      }
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
