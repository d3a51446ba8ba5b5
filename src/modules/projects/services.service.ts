import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { OutboundRefusedError, outboundPolicy, postgresUrlHost } from '../../lib/outbound.js';
import { insertAuditEvent } from '../audit/index.js';
import * as store from './services.store.js';
import type { ProjectRow } from './projects.store.js';
import type { ServiceRow } from './services.store.js';

/** Contract section 8: `{ id, kind, name }` (+ createdAt); the connection URL is never returned. */
export interface ServiceRecord {
  id: string;
  kind: 'volume' | 'postgres';
  name: string;
  createdAt: string;
}

export function serviceRecord(s: ServiceRow): ServiceRecord {
  return { id: s.id, kind: s.kind as ServiceRecord['kind'], name: s.name, createdAt: s.createdAt };
}

const serviceAad = (projectId: string, name: string) => `service:${projectId}:${name}`;

export async function listServices(ctx: AppContext, row: ProjectRow): Promise<ServiceRecord[]> {
  return (await store.listServices(ctx.db, row.orgId, row.id)).map(serviceRecord);
}

export async function createService(ctx: AppContext, actor: Actor, row: ProjectRow, input: { kind: 'postgres'; name: string; connectionUrl: string }): Promise<ServiceRecord> {
  const name = input.name.trim();
  if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) throw invalid('name', 'name must be lowercase letters, digits, "_" and "-" (at most 63 characters)');
  let url: URL;
  try {
    url = new URL(input.connectionUrl);
  } catch {
    throw invalid('connectionUrl', 'connectionUrl must be a postgres:// URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw invalid('connectionUrl', 'connectionUrl must be a postgres:// or postgresql:// URL');
  if (!url.hostname) throw invalid('connectionUrl', 'connectionUrl must name a host');
  // The host must not be (or resolve to) an internal address unless BERTH_OUTBOUND_ALLOW lists it
  // (contract section 17); backups check it again, and pin the address, at every use.
  try {
    await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(postgresUrlHost(input.connectionUrl));
  } catch (e) {
    if (!(e instanceof OutboundRefusedError)) throw e;
    if (e.reason === 'unresolvable') throw invalid('connectionUrl', `connectionUrl: the host ${e.host} does not resolve`);
    if (e.reason === 'invalid') throw invalid('connectionUrl', 'connectionUrl must name one database host (no Unix socket, host list or host/hostaddr parameter)');
    throw invalid('connectionUrl', `connectionUrl points to a ${e.detail ?? 'internal'} address (or to a name that resolves to one); Berth does not connect to loopback, private, link-local or metadata addresses unless BERTH_OUTBOUND_ALLOW lists them`);
  }
  const svc: ServiceRow = {
    id: newId('svc'),
    orgId: row.orgId,
    projectId: row.id,
    kind: 'postgres',
    name,
    connectionUrl: encryptSecret(ctx.keyring, input.connectionUrl, serviceAad(row.id, name)),
    createdAt: nowIso(),
  };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertService(tx, svc);
      await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.create', resourceType: 'project', resourceId: row.id, details: { serviceId: svc.id, kind: svc.kind, name } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`this project already has a service named "${name}"`, 'name');
    throw e;
  }
  return serviceRecord(svc);
}

/** For backups only (never over HTTP): a service of a project with its decrypted connection URL. */
export async function resolveService(ctx: AppContext, orgId: string, projectId: string, serviceId: string): Promise<ServiceRecord & { connectionUrl: string | null }> {
  const s = await store.findService(ctx.db, orgId, projectId, serviceId);
  if (!s) throw notFound('service');
  return { ...serviceRecord(s), connectionUrl: s.connectionUrl ? decryptSecret(ctx.keyring, s.connectionUrl, serviceAad(s.projectId, s.name)) : null };
}

/**
 * For backups only: the project's `data` volume service. Every project has it (contract section 8);
 * rows made before it existed get it now.
 */
export async function dataVolume(ctx: Pick<AppContext, 'db'>, orgId: string, projectId: string): Promise<ServiceRecord> {
  const found = await store.findServiceByName(ctx.db, orgId, projectId, 'data');
  if (found) return serviceRecord(found);
  await store.insertServiceIfMissing(ctx.db, { id: newId('svc'), orgId, projectId, kind: 'volume', name: 'data', createdAt: nowIso(), connectionUrl: null });
  return serviceRecord((await store.findServiceByName(ctx.db, orgId, projectId, 'data'))!);
}

/**
 * A project's own services (outside databases and the data volume) for other areas, as one object:
 * the services area lists and attaches through it, backups find the data volume and open a database's
 * connection URL (`resolve`, never over HTTP).
 */
export const attachedServices = { attach: createService, list: listServices, resolve: resolveService, dataVolume } as const;
