import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute, type ModuleDef } from '../../http/route.js';
import { Id, IdParams, Obj, Str } from '../../http/schemas.js';
import { AppError } from '../../lib/errors.js';
import { closeAfterAnswer } from '../../http/close-after-answer.js';
import { authenticateUpload, checkDeclaredLength, currentForProject, receiveUpload, UploadSchema, UPLOAD_CONTENT_TYPES, UPLOAD_TOKEN_HEADER } from '../uploads/index.js';
import { BundleSchema, type Bundle } from './bundle.js';
import { exportBundle, importBundle } from './bundle-exchange.service.js';
import { CloudHost } from './cloud-host.js';
import { recordRefProject } from './cloud-records.js';
import { GZIP, ImportedProjectSchema, RecordProjectSchema, SealedBundleSchema, ServiceDataSchema, SourceArchiveSchema, TransferResultSchema } from './cloud.presenters.js';
import { forwardToCloud, mayForwardToCloud } from './forward.js';
import { forwardCloudRecord, forwardCloudStream } from './forward-records.js';
import { receiveServiceData, sendServiceData, SERVICE_DATA_TYPES } from './service-data.js';
import { receiveSourceArchive, sourceArchivePath } from './source.js';
import { transferToCloud, transferToSelfHosted } from './transfer.service.js';
import { TransferTracker } from './transfer-progress.js';
import { transferRoutes } from './transfers.routes.js';


/** `includeData`: each managed service's native dump moves too, loaded into its new instance there. */
const TransferBody = Type.Optional(Type.Union([Obj({ includeData: Type.Optional(Type.Boolean()) }), Type.Null()]));
const ServiceDataParams = Obj({ id: Id, name: Str({ min: 1, max: 63, pattern: '^[a-z][a-z0-9_-]*$' }) });

const cloudRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/transfer/to-cloud',
    summary: 'Promote a local project to the hosted cloud service (copy, verify, flip). Self-hosted only.',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    selfHostedOnly: true,
    schema: { params: IdParams, body: TransferBody, response: TransferResultSchema },
    handler: ({ actor, resource, req, body }, ctx) => transferToCloud(ctx, actor, resource.record, req.id, body?.includeData === true),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/transfer/to-self-hosted',
    summary: 'Bring a cloud project back to this instance (copy, verify, flip, then delete the cloud copy). Self-hosted only.',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    selfHostedOnly: true,
    schema: { params: IdParams, body: TransferBody, response: TransferResultSchema },
    handler: ({ actor, resource, req, body }, ctx) => transferToSelfHosted(ctx, actor, resource.record, req.id, body?.includeData === true),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/import-bundle',
    cloudOnly: true,
    summary: 'Create a project from a transfer bundle in one transaction (cloud only; used by transfer/to-cloud).',
    // admin, like export and delete: the link token that creates a copy must be able to read it
    // back and to remove it when the transfer fails.
    tag: 'project:admin',
    status: 201,
    bodyLimit: 128 * 1024 * 1024,
    schema: { body: Obj({ bundle: BundleSchema }), response: ImportedProjectSchema },
    handler: ({ actor, body }, ctx) => importBundle(ctx, actor, body.bundle as Bundle),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/export',
    cloudOnly: true,
    summary: 'The project as a transfer bundle, secret values sealed to the caller\'s one-time X25519 key (cloud only; used by transfers).',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    schema: { params: IdParams, body: Obj({ recipientKey: Str({ min: 43, max: 43 }) }), response: SealedBundleSchema },
    handler: ({ actor, resource, body }, ctx) => exportBundle(ctx, actor, resource.record, body.recipientKey),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/source-archive',
    cloudOnly: true,
    summary: 'Cloud only: make a gzipped tarball the project\'s uploaded source, its config kept as it is (used by transfer/to-cloud)',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    streamBody: UPLOAD_CONTENT_TYPES,
    schema: { params: IdParams, querystring: Obj({ sha256: Type.Optional(Str({ min: 64, max: 64, pattern: '^[0-9a-f]{64}$' })) }), response: SourceArchiveSchema },
    async handler({ actor, resource, req, reply, query }, ctx) {
      try {
        checkDeclaredLength(req.headers['content-length']);
        const row = resource.record;
        return await receiveSourceArchive(ctx, actor, row.orgId, row.id, req.raw.iterator({ destroyOnReturn: false }), query.sha256);
      } catch (e) {
        closeAfterAnswer(req, reply);
        throw e;
      }
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/source-archive',
    cloudOnly: true,
    summary: 'Cloud only: the project\'s uploaded source archive, sha256 in X-Berth-Sha256 (used by transfer/to-self-hosted)',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    raw: true,
    produces: GZIP,
    schema: { params: IdParams },
    async handler({ resource, reply }, ctx) {
      const row = resource.record;
      const file = await sourceArchivePath(ctx, row.orgId, row.id);
      const meta = await currentForProject(ctx.db, row.orgId, row.id);
      if (!file || !meta?.sha256) throw new AppError('NOT_FOUND', 'this project has no uploaded source');
      const size = (await stat(file)).size;
      reply.header('content-type', GZIP).header('content-length', String(size)).header('x-berth-sha256', meta.sha256);
      await reply.send(createReadStream(file));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/transfer-data/:name',
    cloudOnly: true,
    summary: 'Cloud only: a native dump of the managed service `name`, checked against `sha256` and loaded into it as a restore does (used by transfer/to-cloud with includeData)',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    streamBody: SERVICE_DATA_TYPES,
    schema: { params: ServiceDataParams, querystring: Obj({ sha256: Str({ min: 64, max: 64, pattern: '^[0-9a-f]{64}$' }) }), response: ServiceDataSchema },
    async handler({ resource, req, reply, params, query }, ctx) {
      try {
        return await receiveServiceData(ctx, resource.record, params.name, req.raw.iterator({ destroyOnReturn: false }), query.sha256);
      } catch (e) {
        closeAfterAnswer(req, reply);
        throw e;
      }
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/transfer-data/:name',
    cloudOnly: true,
    summary: 'Cloud only: a native dump of the running managed service `name`, sha256 in X-Berth-Sha256 (used by transfer/to-self-hosted with includeData)',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    raw: true,
    produces: 'application/octet-stream',
    schema: { params: ServiceDataParams },
    handler: ({ resource, reply, params }, ctx) => sendServiceData(ctx, resource.record, params.name, reply),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/cloud/refs/:kind/:id',
    cloudOnly: true,
    summary: 'Cloud only: the project a record of the caller\'s org lives under (a deployment, a backup policy, run or restore): a linked instance asks before it forwards a route named by such an id',
    // Reading which project a record hangs under is reading the record: project:read, checked
    // again on the record itself (404 missing or another org's, 403 same org).
    tag: 'project:read',
    schema: { params: Obj({ kind: Str({ min: 1, max: 64, pattern: '^[a-z]+$' }), id: Id }), response: RecordProjectSchema },
    handler: ({ actor, params, req }, ctx) => recordRefProject(ctx, ctx.ports.cloud!.tableOf(req.server.berth.modules), actor, params.kind, params.id),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/uploads/:sessionId',
    cloudOnly: true,
    summary: 'Cloud only: the upload target a cloud folder-upload session hands out (the cloud\'s own counterpart of the self-hosted relay; at most 300 MB)',
    tag: 'project:write',
    // The credential is the session's upload token header, as on the relay.
    access: 'public',
    streamBody: UPLOAD_CONTENT_TYPES,
    schema: { params: Obj({ sessionId: Id }), response: UploadSchema },
    async handler({ params, req, reply }, ctx) {
      try {
        checkDeclaredLength(req.headers['content-length']);
        const token = req.headers[UPLOAD_TOKEN_HEADER];
        const row = await authenticateUpload(ctx, params.sessionId, typeof token === 'string' ? token : undefined);
        return await receiveUpload(ctx, row, req.raw.iterator({ destroyOnReturn: false }));
      } catch (e) {
        closeAfterAnswer(req, reply);
        throw e;
      }
    },
  }),
];

const own = (def: AnyRoute) => (cloudRoutes as AnyRoute[]).includes(def) || (transferRoutes as AnyRoute[]).includes(def);

/**
 * Cloud mode and the link: transfers and their cloud side, and the forwarding of a cloud project's
 * requests (its own routes, records named by a cloud record's id, token streams) over the link.
 */
export const cloudModule: ModuleDef = {
  name: 'cloud',
  declares: { cloud: 'one' },
  provides: (ctx) => ({ cloud: new CloudHost(ctx) }),
  // Only a self-hosted instance forwards, and only routes that name a record; this area's own routes
  // act on the local record and are never forwarded.
  forwards: (def, ctx) => ctx.config.mode === 'self-hosted' && def.resource !== undefined && !own(def),
  // Token streams of a cloud record first (they name no project), then a cloud project's routes; a
  // request for a local project is answered false at once (no promise on the common path).
  forward: (def, req, reply, ctx) => {
    if (def.access === 'stream-token') return forwardCloudStream(def, req, reply, ctx).then((took) => took || forwardToCloud(def, req, reply, ctx));
    return mayForwardToCloud(def, req, ctx) && forwardToCloud(def, req, reply, ctx);
  },
  forwardUnresolved: forwardCloudRecord,
  routes: [...cloudRoutes, ...transferRoutes],
  state: () => ({ transfers: new TransferTracker() }),
  async stop(ctx) {
    await ctx.ports.cloud?.close();
  },
};
