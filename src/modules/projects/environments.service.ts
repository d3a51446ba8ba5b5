/**
 * A project's environments: production (made with the project) and previews (contract section 16).
 * A preview is created with a copy of production's variables (secrets too, sealed again for the new
 * environment: the AAD binds the environment) and a host of its own (preview-domains.ts); its
 * removal (releases, processes, rows) is the deployments area's `removePreviewEnvironment`.
 */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction, type Db } from '../../db/client.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { AppError, conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { envAad } from './env.service.js';
import * as envStore from './env.store.js';
import type { EnvVarRow } from './env.store.js';
import { pickPreviewSlug } from './preview-domains.js';
import { environmentRecord, servingDomain, type EnvironmentRecord } from './projects.presenters.js';
import * as domainsStore from './domains.store.js';
import * as environmentsStore from './environments.store.js';
import type { EnvironmentRow } from './environments.store.js';
import type { ProjectRow } from './projects.store.js';
import { checkBranch } from './validate.js';

const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** The records of environment rows of one project (the production URL read once). */
export async function environmentRecords(ctx: AppContext, row: Pick<ProjectRow, 'id' | 'orgId' | 'slug'>, envs: EnvironmentRow[]): Promise<EnvironmentRecord[]> {
  const host = servingDomain(ctx, row.slug, await domainsStore.listDomains(ctx.db, row.orgId, row.id));
  return envs.map((e) => environmentRecord(ctx, row, e, host));
}

export async function listEnvironments(ctx: AppContext, row: ProjectRow): Promise<EnvironmentRecord[]> {
  return environmentRecords(ctx, row, await environmentsStore.listEnvironments(ctx.db, row.orgId, row.id));
}

function checkName(input: string): string {
  const name = input.trim().toLowerCase();
  if (!NAME_RE.test(name)) throw invalid('name', 'name must be lowercase letters, digits and dashes (at most 63 characters)');
  if (name === 'production') throw invalid('name', 'name "production" is the production environment: a preview needs another name');
  return name;
}

function checkOptionalBranch(input: string | undefined | null): string | null {
  return input === undefined || input === null || input.trim() === '' ? null : checkBranch(input, 'branch');
}

/** `POST /api/projects/:id/environments`: a new preview environment (409 when the name is taken). */
export async function createEnvironment(ctx: AppContext, actor: Actor, row: ProjectRow, input: { name: string; branch?: string }): Promise<EnvironmentRecord> {
  const name = input.name.trim().toLowerCase();
  if (!NAME_RE.test(name)) throw invalid('name', 'name must be lowercase letters, digits and dashes (at most 63 characters)');
  const branch = checkOptionalBranch(input.branch);
  if (await environmentsStore.findEnvironment(ctx.db, row.orgId, row.id, name)) throw conflict(`this project already has an environment named "${name}"`, 'name');
  const env = await insertPreview(ctx, actor, row, name, branch);
  if (!env) throw conflict(`this project already has an environment named "${name}"`, 'name');
  return (await environmentRecords(ctx, row, [env]))[0]!;
}

/**
 * The preview environment `name` for `branch`: created when missing (as POST environments does),
 * its branch (and so its host) changed when it has another one. Answers the row and whether it was
 * made. `production` (or any production environment) is a 400 naming `name`.
 */
export async function ensureEnvironment(ctx: AppContext, actor: Actor, row: ProjectRow, input: { name: string; branch: string }): Promise<{ env: EnvironmentRow; created: boolean }> {
  const name = checkName(input.name);
  const branch = checkOptionalBranch(input.branch);
  for (let attempt = 0; ; attempt++) {
    const existing = await environmentsStore.findEnvironment(ctx.db, row.orgId, row.id, name);
    if (existing) {
      if (existing.type !== 'preview') throw invalid('name', `environment "${name}" is not a preview environment`);
      if (existing.branch === branch && existing.slug) return { env: existing, created: false };
      const updated = await updatePreviewBranch(ctx, actor, row, existing, branch);
      if (updated) return { env: updated, created: false };
    } else {
      const env = await insertPreview(ctx, actor, row, name, branch);
      if (env) return { env, created: true };
    }
    // A concurrent ensure made or changed it (or took the slug): look again.
    if (attempt >= 4) throw conflict(`environment "${name}" changed concurrently: try again`, 'name');
  }
}

/** Inserts the preview with a copy of production's variables; null when the name was taken meanwhile. */
async function insertPreview(ctx: AppContext, actor: Actor, row: ProjectRow, name: string, branch: string | null): Promise<EnvironmentRow | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await transaction(ctx.db, async (tx) => {
        const slug = pickPreviewSlug(branch ?? name, name, row.slug, new Set(await environmentsStore.previewSlugs(tx, row.orgId, row.id)));
        const env: EnvironmentRow = { id: newId('env'), orgId: row.orgId, projectId: row.id, name, type: 'preview', branch, slug, envRevision: 0, createdAt: nowIso() };
        await environmentsStore.insertEnvironment(tx, env);
        const copied = await copyProductionVars(ctx, tx, row, name, env.createdAt);
        await insertAuditEvent(tx, {
          orgId: row.orgId,
          actorId: actor.userId,
          action: 'project.environment.create',
          resourceType: 'project',
          resourceId: row.id,
          details: { environment: name, branch, domainSlug: slug, copiedKeys: copied },
        });
        return env;
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      // The name (a concurrent create) or the slug (a concurrent preview of a branch that slugs alike).
      if (await environmentsStore.findEnvironment(ctx.db, row.orgId, row.id, name)) return null;
    }
  }
  throw conflict('the preview environment could not get a host of its own: try again', 'branch');
}

/** A preview's new branch and the host that goes with it; null when it changed meanwhile. */
async function updatePreviewBranch(ctx: AppContext, actor: Actor, row: ProjectRow, env: EnvironmentRow, branch: string | null): Promise<EnvironmentRow | null> {
  try {
    return await transaction(ctx.db, async (tx) => {
      const now = await environmentsStore.findEnvironment(tx, row.orgId, row.id, env.name);
      if (!now || now.id !== env.id) return null;
      const slug = pickPreviewSlug(branch ?? env.name, env.name, row.slug, new Set(await environmentsStore.previewSlugs(tx, row.orgId, row.id, env.id)));
      await environmentsStore.updateEnvironment(tx, row.orgId, env.id, { branch, slug });
      await insertAuditEvent(tx, {
        orgId: row.orgId,
        actorId: actor.userId,
        action: 'project.environment.update',
        resourceType: 'project',
        resourceId: row.id,
        details: { environment: env.name, from: env.branch, branch, domainSlug: slug },
      });
      return { ...now, branch, slug };
    });
  } catch (e) {
    if (isUniqueViolation(e)) return null;
    throw e;
  }
}

/** Production's variables sealed again for `environment` (its own AAD), in the creating transaction; answers how many. */
async function copyProductionVars(ctx: AppContext, tx: Db, row: ProjectRow, environment: string, at: string): Promise<number> {
  const rows: EnvVarRow[] = [];
  for (const r of await envStore.listEnvVars(tx, row.orgId, row.id, 'production')) {
    let value: string;
    try {
      value = decryptSecret(ctx.keyring, r.value, envAad(row.id, 'production', r.key));
    } catch {
      throw new AppError('INTERNAL', `production's variable ${r.key} could not be decrypted (was the secret key changed?)`);
    }
    rows.push({ id: newId('ev'), orgId: row.orgId, projectId: row.id, environment, key: r.key, value: encryptSecret(ctx.keyring, value, envAad(row.id, environment, r.key)), isSecret: r.isSecret, createdAt: at, updatedAt: at });
  }
  await envStore.upsertEnvVars(tx, rows);
  return rows.length;
}
