import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError, conflict, invalid, notFound } from '../../lib/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import * as envStore from './env.store.js';
import type { EnvHead, EnvVarRow } from './env.store.js';
import type { ProjectRow } from './projects.store.js';

export const MASK = '********';
export const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_ENV_KEYS = 1000;
export const MAX_ENV_VALUE_BYTES = 64 * 1024;

export interface EnvVarRecord {
  key: string;
  value: string;
  isSecret: boolean;
  environment: string;
  updatedAt: string;
}

/** AAD of an env value: binds the ciphertext to its project, environment and key. */
export function envAad(projectId: string, environment: string, key: string): string {
  return `env:${projectId}:${environment}:${key}`;
}

function etagOf(env: EnvHead): string {
  return `"${env.id}.${env.envRevision}"`;
}

function noEnvironment(name: string): AppError {
  return invalid('environment', `this project has no environment named "${name}"`);
}

function toRecord(ctx: AppContext, r: EnvVarRow): EnvVarRecord {
  return {
    key: r.key,
    value: r.isSecret === 1 ? MASK : decryptSecret(ctx.keyring, r.value, envAad(r.projectId, r.environment, r.key)),
    isSecret: r.isSecret === 1,
    environment: r.environment,
    updatedAt: r.updatedAt,
  };
}

/** Variables of one environment, secret values masked, with the ETag of the set (one query). */
export async function getEnv(ctx: AppContext, row: ProjectRow, environment = 'production'): Promise<{ vars: EnvVarRecord[]; etag: string }> {
  const read = await envStore.readEnv(ctx.db, row.orgId, row.id, environment);
  if (!read) throw noEnvironment(environment);
  return { vars: read.vars.map((r) => toRecord(ctx, r)), etag: etagOf(read.env) };
}

export interface EnvPatch {
  environment?: string;
  upserts?: { key: string; value: string; isSecret?: boolean }[];
  deletes?: string[];
}

/** `"a.1"`, `W/"a.1"`, `"a.1", "b.2"`, `*` -> does any of them name the current revision? */
function ifMatchHolds(header: string, current: string): boolean {
  return header
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === current);
}

/**
 * The merge PATCH (seed route detail 6): only the named keys are touched. An upsert inserts or
 * updates a key (`isSecret` omitted keeps the key's current flag, false for a new key); an upsert of a
 * secret whose value is the mask `********` leaves it untouched; deletes remove keys (absent keys are
 * ignored). With `ifMatch`, a set changed since that ETag is 409 and nothing is written.
 */
export async function patchEnv(ctx: AppContext, actor: Actor, row: ProjectRow, patch: EnvPatch, ifMatch?: string): Promise<{ vars: EnvVarRecord[]; etag: string }> {
  const environment = patch.environment ?? 'production';
  const upserts = patch.upserts ?? [];
  const deletes = patch.deletes ?? [];
  const seen = new Set<string>();
  upserts.forEach((u, i) => {
    if (!ENV_KEY_RE.test(u.key)) throw invalid(`upserts.${i}.key`, `upserts.${i}.key must match ^[A-Za-z_][A-Za-z0-9_]*$`);
    if (seen.has(u.key)) throw invalid(`upserts.${i}.key`, `key ${u.key} appears twice in upserts`);
    seen.add(u.key);
    if (Buffer.byteLength(u.value, 'utf8') > MAX_ENV_VALUE_BYTES) throw invalid(`upserts.${i}.value`, `upserts.${i}.value must be at most 64 KiB`);
  });
  deletes.forEach((k, i) => {
    if (!ENV_KEY_RE.test(k)) throw invalid(`deletes.${i}`, `deletes.${i} must match ^[A-Za-z_][A-Za-z0-9_]*$`);
    if (seen.has(k)) throw invalid(`deletes.${i}`, `key ${k} is both upserted and deleted`);
  });

  const now = nowIso();
  // One transaction, one statement per table: the revision bump (which also finds the environment
  // and locks it), the variables as they are, one multi-row upsert, one delete, the audit row. The
  // answer is the set as this transaction leaves it, built here rather than read again.
  const answer = await transaction(ctx.db, async (tx) => {
    const env = await envStore.bumpEnvRevisionOf(tx, row.orgId, row.id, environment);
    if (!env) throw noEnvironment(environment);
    // Concurrency: compare-and-set on the revision the bump moved on from (a stale If-Match rolls the bump back).
    if (ifMatch !== undefined && ifMatch.trim() !== '' && !ifMatchHolds(ifMatch, etagOf({ ...env, envRevision: env.envRevision - 1 }))) {
      throw conflict('the variables changed since you read them (stale If-Match): read them again and retry');
    }

    const existing = new Map((await envStore.listEnvVars(tx, row.orgId, row.id, env.name)).map((r) => [r.key, r]));
    const finalKeys = new Set(existing.keys());
    for (const u of upserts) finalKeys.add(u.key);
    for (const k of deletes) finalKeys.delete(k);
    if (finalKeys.size > MAX_ENV_KEYS) {
      throw invalid('upserts', `an environment holds at most ${MAX_ENV_KEYS} variables (this change would make ${finalKeys.size})`);
    }

    const rows: EnvVarRow[] = [];
    const after = new Map<string, EnvVarRecord>();
    const changed: string[] = [];
    for (const u of upserts) {
      const was = existing.get(u.key);
      if (was?.isSecret === 1 && u.value === MASK) continue; // masked secret sent back as read: left intact
      const isSecret = u.isSecret ?? (was ? was.isSecret === 1 : false);
      rows.push({
        id: newId('ev'),
        orgId: row.orgId,
        projectId: row.id,
        environment: env.name,
        key: u.key,
        value: encryptSecret(ctx.keyring, u.value, envAad(row.id, env.name, u.key)),
        isSecret: isSecret ? 1 : 0,
        createdAt: now,
        updatedAt: now,
      });
      after.set(u.key, { key: u.key, value: isSecret ? MASK : u.value, isSecret, environment: env.name, updatedAt: now });
      changed.push(u.key);
    }
    if (rows.length) await envStore.upsertEnvVars(tx, rows);
    const deleted = deletes.filter((k) => existing.has(k));
    if (deleted.length) await envStore.deleteEnvVars(tx, row.orgId, row.id, env.name, deleted);
    // Keys only, never values.
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.env.update',
      resourceType: 'project',
      resourceId: row.id,
      details: { environment: env.name, upserted: changed, deleted },
    });
    for (const k of deleted) existing.delete(k);
    const vars = [...existing.values()].filter((r) => !after.has(r.key)).map((r) => toRecord(ctx, r));
    return { vars: [...vars, ...after.values()].sort(envStore.byKey), etag: etagOf(env) };
  });
  return answer;
}

/**
 * For build-and-run only (never over HTTP): the decrypted variables of a project's environment and
 * the list of secret values (to redact from build and runtime logs).
 */
export async function resolveEnvForRuntime(ctx: AppContext, projectId: string, environment = 'production'): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const p = await ctx.db.selectFrom('projects').select(['id', 'orgId']).where('id', '=', projectId).executeTakeFirst();
  if (!p) throw notFound('project');
  const rows = await envStore.listEnvVars(ctx.db, p.orgId, p.id, environment);
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const r of rows) {
    let v: string;
    try {
      v = decryptSecret(ctx.keyring, r.value, envAad(r.projectId, r.environment, r.key));
    } catch {
      throw new AppError('INTERNAL', `env variable ${r.key} could not be decrypted (was the secret key changed?)`);
    }
    env[r.key] = v;
    if (r.isSecret === 1 && v !== '') secrets.push(v);
  }
  return { env, secrets };
}
