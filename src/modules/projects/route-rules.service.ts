import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { invalid, notFound } from '../../lib/errors.js';
import { countWildcards, MAX_GLOB_WILDCARDS } from '../../edge/glob.js';
import { normalizePath } from '../../edge/normalize.js';
import { formatCidr, parseCidr } from '../../lib/cidr.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import * as store from './route-rules.store.js';
import type { ProjectRow } from './projects.store.js';
import type { RouteRuleRow } from './route-rules.store.js';

export const RULE_KINDS = ['rate-limit', 'ban', 'allow-deny'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export interface RuleInput {
  kind?: RuleKind;
  enabled?: boolean;
  path?: string | null;
  limit?: number;
  windowSeconds?: number;
  ips?: string[];
  expiresAt?: string | null;
  action?: 'allow' | 'deny';
  cidrs?: string[];
}

type RuleConfig =
  | { limit: number; windowSeconds: number }
  | { ips: string[]; expiresAt: string | null }
  | { action: 'allow' | 'deny'; cidrs: string[] };

export type RouteRuleRecord = { id: string; kind: RuleKind; enabled: boolean; path: string | null; createdAt: string; updatedAt: string } & RuleConfig;

export function routeRuleRecord(r: RouteRuleRow): RouteRuleRecord {
  return {
    id: r.id,
    kind: r.kind as RuleKind,
    enabled: r.enabled === 1,
    path: r.path,
    ...(JSON.parse(r.config) as RuleConfig),
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

const PATH_RE = /^\/[A-Za-z0-9\-._~/*%:@!$&'()+,;=]*$/;

function checkPath(p: string | null | undefined): string | null | undefined {
  if (p === undefined || p === null) return p;
  const s = p.trim();
  if (s === '') return null;
  if (!PATH_RE.test(s)) throw invalid('path', 'path must start with "/" and be a path prefix (/api) or glob (/api/*) without spaces or query');
  // The edge matches the normalised request path (docs/edge.md): the rule is stored in that form too.
  const norm = normalizePath(s);
  if (norm === null) throw invalid('path', 'path must not hold an encoded "/" or "\\" (%2F, %5C), %00 or an invalid percent-escape');
  if (countWildcards(norm) > MAX_GLOB_WILDCARDS) throw invalid('path', `a glob path may hold at most ${MAX_GLOB_WILDCARDS} wildcards (* and ? together)`);
  return norm;
}

function checkRanges(list: string[], field: string): string[] {
  if (list.length === 0) throw invalid(field, `${field} must name at least one address or CIDR range`);
  const out: string[] = [];
  list.forEach((s, i) => {
    const c = parseCidr(s);
    if (!c) throw invalid(`${field}.${i}`, `${field}.${i} must be an IPv4 or IPv6 address or CIDR range (got "${s.slice(0, 64)}")`);
    const f = formatCidr(c);
    if (!out.includes(f)) out.push(f);
  });
  return out;
}

function checkExpiresAt(v: string | null | undefined): string | null | undefined {
  if (v === undefined || v === null) return v;
  const t = Date.parse(v);
  if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}/.test(v)) throw invalid('expiresAt', 'expiresAt must be an ISO-8601 date-time');
  return new Date(t).toISOString();
}

function requirePositiveInt(v: number | undefined, field: string, max: number): number {
  if (v === undefined) throw invalid(field, `${field} is required`);
  if (!Number.isInteger(v) || v < 1 || v > max) throw invalid(field, `${field} must be a whole number from 1 to ${max}`);
  return v;
}

/** The kind's fields, validated, over `base` (for PATCH). */
function buildConfig(kind: RuleKind, input: RuleInput, base: Record<string, unknown> = {}): RuleConfig {
  switch (kind) {
    case 'rate-limit':
      return {
        limit: requirePositiveInt(input.limit ?? (base.limit as number | undefined), 'limit', 1_000_000),
        windowSeconds: requirePositiveInt(input.windowSeconds ?? (base.windowSeconds as number | undefined), 'windowSeconds', 86_400),
      };
    case 'ban': {
      const ips = input.ips !== undefined ? checkRanges(input.ips, 'ips') : (base.ips as string[] | undefined);
      if (!ips) throw invalid('ips', 'ips is required');
      const exp = checkExpiresAt(input.expiresAt);
      return { ips, expiresAt: exp !== undefined ? exp : ((base.expiresAt as string | null | undefined) ?? null) };
    }
    case 'allow-deny': {
      const action = input.action ?? (base.action as 'allow' | 'deny' | undefined);
      if (!action) throw invalid('action', 'action is required (allow or deny)');
      const cidrs = input.cidrs !== undefined ? checkRanges(input.cidrs, 'cidrs') : (base.cidrs as string[] | undefined);
      if (!cidrs) throw invalid('cidrs', 'cidrs is required');
      return { action, cidrs };
    }
  }
}

export async function listRules(ctx: AppContext, row: ProjectRow): Promise<RouteRuleRecord[]> {
  return (await store.listRouteRules(ctx.db, row.orgId, row.id)).map(routeRuleRecord);
}

export async function createRule(ctx: AppContext, actor: Actor, row: ProjectRow, input: RuleInput): Promise<RouteRuleRecord> {
  if (!input.kind) throw invalid('kind', 'kind is required (rate-limit, ban or allow-deny)');
  const config = buildConfig(input.kind, input);
  const now = nowIso();
  const rule: RouteRuleRow = {
    id: newId('rr'),
    orgId: row.orgId,
    projectId: row.id,
    kind: input.kind,
    enabled: input.enabled === false ? 0 : 1,
    path: checkPath(input.path) ?? null,
    config: JSON.stringify(config),
    createdAt: now,
    updatedAt: now,
  };
  await transaction(ctx.db, async (tx) => {
    await store.insertRouteRule(tx, rule);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.route_rule.create', resourceType: 'project', resourceId: row.id, details: { ruleId: rule.id, kind: rule.kind } });
  });
  return routeRuleRecord(rule);
}

export async function updateRule(ctx: AppContext, actor: Actor, row: ProjectRow, ruleId: string, input: RuleInput): Promise<RouteRuleRecord> {
  const cur = await store.findRouteRule(ctx.db, row.orgId, row.id, ruleId);
  if (!cur) throw notFound('route rule');
  if (input.kind !== undefined && input.kind !== cur.kind) throw invalid('kind', 'kind cannot change: delete the rule and create another');
  const config = buildConfig(cur.kind as RuleKind, input, JSON.parse(cur.config) as Record<string, unknown>);
  const path = checkPath(input.path);
  const next: RouteRuleRow = {
    ...cur,
    enabled: input.enabled === undefined ? cur.enabled : input.enabled ? 1 : 0,
    path: path === undefined ? cur.path : path,
    config: JSON.stringify(config),
    updatedAt: nowIso(),
  };
  await transaction(ctx.db, async (tx) => {
    await store.updateRouteRule(tx, row.orgId, row.id, ruleId, { enabled: next.enabled, path: next.path, config: next.config, updatedAt: next.updatedAt });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.route_rule.update', resourceType: 'project', resourceId: row.id, details: { ruleId } });
  });
  return routeRuleRecord(next);
}

export async function deleteRule(ctx: AppContext, actor: Actor, row: ProjectRow, ruleId: string): Promise<{ id: string; deleted: true }> {
  await transaction(ctx.db, async (tx) => {
    if ((await store.deleteRouteRule(tx, row.orgId, row.id, ruleId)) === 0) throw notFound('route rule');
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.route_rule.delete', resourceType: 'project', resourceId: row.id, details: { ruleId } });
  });
  return { id: ruleId, deleted: true };
}
