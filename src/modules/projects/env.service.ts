import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { serialOf, type Turn } from '../../db/serial.js';
import { AppError, conflict, invalid, notFound } from '../../lib/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { auditEventRow } from '../audit/index.js';
import * as envStore from './env.store.js';
import type { EnvHead, EnvVarRow, EnvVarView } from './env.store.js';
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

function toRecord(ctx: AppContext, r: EnvVarView): EnvVarRecord {
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
  const read = await envStore.readEnv(ctx.db, ctx.dialect, row.orgId, row.id, environment);
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

  // PATCHes of one environment take turns in this process (`db/serial.ts`): run together, all but
  // one would lose the compare-and-set and read again.
  return serialOf(ctx.db).run<{ vars: EnvVarRecord[]; etag: string }, EnvState>(`env:${row.id}:${environment}`, (turn) => writeEnvPatch(ctx, actor, row, environment, upserts, deletes, ifMatch, turn));
}

/** An environment and its variables as a PATCH left them (handed to the next PATCH queued behind it). */
interface EnvState {
  env: EnvHead;
  vars: EnvVarView[];
}

/** Optimistic attempts of a PATCH before it writes under the environment's row lock. */
const OPTIMISTIC_ATTEMPTS = 2;

/**
 * The PATCH itself: start from the environment and its variables (what the PATCH queued before this
 * one handed over, else one query), work out the change, and write it all at once if the
 * environment's revision has not moved since (`applyEnvPatch`: one statement on PostgreSQL, so the
 * environment's row is locked only while it runs). When it moved (another instance wrote), an
 * If-Match PATCH is 409; one without tries again, and after OPTIMISTIC_ATTEMPTS reads and writes
 * under the row lock (a transaction), so a busy other instance cannot starve it. The answer is the
 * set as the write leaves it, built here rather than read again.
 */
async function writeEnvPatch(ctx: AppContext, actor: Actor, row: ProjectRow, environment: string, upserts: NonNullable<EnvPatch['upserts']>, deletes: string[], ifMatch: string | undefined, turn: Turn<EnvState>): Promise<{ vars: EnvVarRecord[]; etag: string }> {
  const stale = () => conflict('the variables changed since you read them (stale If-Match): read them again and retry');
  const withIfMatch = ifMatch !== undefined && ifMatch.trim() !== '';
  const read = async (db: Db) => {
    const r = await envStore.readEnv(db, ctx.dialect, row.orgId, row.id, environment);
    if (!r) throw noEnvironment(environment);
    return r;
  };
  /** Writes the change computed from `from`; undefined when the revision moved since `from`. */
  const write = async (db: Db, from: EnvState) => {
    const plan = planEnvPatch(ctx, actor, row, from, upserts, deletes);
    const written = await envStore.applyEnvPatch(db, ctx.dialect, { orgId: row.orgId, projectId: row.id, env: from.env, rows: plan.rows, deletes: plan.deleted, audit: plan.audit });
    if (!written) return undefined;
    turn.handOver({ env: written, vars: plan.vars });
    return { vars: plan.answer, etag: etagOf(written) };
  };

  let handed = turn.handed;
  for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
    const fresh = handed === undefined;
    const from = handed ?? (await read(ctx.db));
    handed = undefined;
    if (withIfMatch && !ifMatchHolds(ifMatch, etagOf(from.env))) {
      if (fresh) throw stale();
      continue; // judged on the database's own set, not on what was handed over
    }
    const done = await write(ctx.db, from);
    if (done) return done;
    if (withIfMatch && fresh) throw stale();
  }
  return transaction(ctx.db, async (tx) => {
    await envStore.lockEnv(tx, ctx.dialect, row.orgId, row.id, environment);
    const from = await read(tx);
    if (withIfMatch && !ifMatchHolds(ifMatch, etagOf(from.env))) throw stale();
    const done = await write(tx, from);
    if (!done) throw new AppError('INTERNAL', 'the environment changed under its row lock');
    return done;
  });
}

/** The rows, deletes and audit row of a PATCH applied to `from`, the set it leaves, and the answer. */
function planEnvPatch(ctx: AppContext, actor: Actor, row: ProjectRow, from: EnvState, upserts: NonNullable<EnvPatch['upserts']>, deletes: string[]) {
  const { env } = from;
  const existing = new Map(from.vars.map((r) => [r.key, r]));
  const finalKeys = new Set(existing.keys());
  for (const u of upserts) finalKeys.add(u.key);
  for (const k of deletes) finalKeys.delete(k);
  if (finalKeys.size > MAX_ENV_KEYS) {
    throw invalid('upserts', `an environment holds at most ${MAX_ENV_KEYS} variables (this change would make ${finalKeys.size})`);
  }
  const now = nowIso();
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
  const deleted = deletes.filter((k) => existing.has(k));
  // Keys only, never values.
  const audit = auditEventRow({
    orgId: row.orgId,
    actorId: actor.userId,
    action: 'project.env.update',
    resourceType: 'project',
    resourceId: row.id,
    details: { environment: env.name, upserted: changed, deleted },
  });
  for (const k of deleted) existing.delete(k);
  const answer = [...existing.values()].filter((r) => !after.has(r.key)).map((r) => toRecord(ctx, r));
  for (const r of rows) existing.set(r.key, r);
  return { rows, deleted, audit, vars: [...existing.values()], answer: [...answer, ...after.values()].sort(envStore.byKey) };
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

/**
 * For other areas, as one object: what a build and a release run with (`resolveEnvForRuntime`), and
 * for a transfer's bundle the rule of a key and the sealing's associated data.
 */
export const projectEnv = { resolveEnvForRuntime, ENV_KEY_RE, envAad } as const;
