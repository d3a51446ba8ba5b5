import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.js';
import { defineRoute, type ModuleDef } from '../../http/route.js';
import { Id, IdParams, Obj, Str } from '../../http/schemas.js';
import { currentForProject } from '../uploads/uploads.store.js';
import { authenticateUpload, checkDeclaredLength, receiveUpload, UPLOAD_CONTENT_TYPES, UPLOAD_TOKEN_HEADER } from '../uploads/uploads.service.js';
import { resolvedProject } from '../projects/projects.service.js';
import { BundleSchema, type Bundle } from './bundle.js';
import { setUnresolvedBuildAccess } from '../deployments/deployments.service.js';
import { cloudBuildAccess, forwardCloudDeploymentLogs, forwardCloudRecord, RECORD_REF_KINDS, recordRefProject } from './record-refs.js';
import { forwardToCloud } from './forward.js';
import { closeCloudLink } from './link.js';
import { cloudOnly, exportBundle, importBundle, transferToCloud, transferToSelfHosted } from './transfer.service.js';
import { receiveSourceArchive, sourceArchivePath } from './source.js';

const project = { kind: 'project', param: 'id' } as const;

/** After an early answer while the body is still arriving: close once the answer is written. */
function closeAfterAnswer(req: FastifyRequest, reply: FastifyReply): void {
  if (req.raw.readableEnded) return;
  reply.header('connection', 'close');
  reply.raw.once('finish', () => {
    const socket = req.raw.socket;
    req.raw.resume();
    const t = setTimeout(() => socket?.destroy(), 2000);
    t.unref();
    socket?.once('close', () => clearTimeout(t));
  });
}

export const cloudModule: ModuleDef = {
  name: 'cloud',
  // Public build-log routes of a cloud deployment first (they name no project), then the project routes.
  forward: async (def, req, reply, ctx) => (await forwardCloudDeploymentLogs(def, req, reply, ctx)) || forwardToCloud(def, req, reply, ctx),
  forwardUnresolved: forwardCloudRecord,
  init() {
    // build/access names its deployment in the body: the deployments service asks this hook when
    // the deployment is not one of this instance's (it answers null on a cloud or an unlinked instance).
    setUnresolvedBuildAccess(cloudBuildAccess);
  },
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/projects/:id/transfer/to-cloud',
      summary: 'Promote a local project to the hosted cloud service (copy, verify, flip). Self-hosted only.',
      tag: 'project:admin',
      resource: project,
      selfHostedOnly: true,
      schema: { params: IdParams },
      handler: ({ actor, resource, req }, ctx) => transferToCloud(ctx, actor, resolvedProject(resource), req.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/:id/transfer/to-self-hosted',
      summary: 'Bring a cloud project back to this instance (copy, verify, flip, then delete the cloud copy). Self-hosted only.',
      tag: 'project:admin',
      resource: project,
      selfHostedOnly: true,
      schema: { params: IdParams },
      handler: ({ actor, resource, req }, ctx) => transferToSelfHosted(ctx, actor, resolvedProject(resource), req.id),
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
      schema: { body: Obj({ bundle: BundleSchema }) },
      handler: ({ actor, body }, ctx) => importBundle(ctx, actor, body.bundle as Bundle),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/:id/export',
      cloudOnly: true,
      summary: 'The project as a transfer bundle, secret values sealed to the caller\'s one-time X25519 key (cloud only; used by transfers).',
      tag: 'project:admin',
      resource: project,
      schema: { params: IdParams, body: Obj({ recipientKey: Str({ min: 43, max: 43 }) }) },
      handler: ({ actor, resource, body }, ctx) => exportBundle(ctx, actor, resolvedProject(resource), body.recipientKey),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/:id/source-archive',
      cloudOnly: true,
      summary: 'Cloud only: make a gzipped tarball the project\'s uploaded source, its config kept as it is (used by transfer/to-cloud)',
      tag: 'project:admin',
      resource: project,
      streamBody: UPLOAD_CONTENT_TYPES,
      schema: { params: IdParams, querystring: Obj({ sha256: Type.Optional(Str({ min: 64, max: 64, pattern: '^[0-9a-f]{64}$' })) }) },
      async handler({ actor, resource, req, reply, query }, ctx) {
        try {
          cloudOnly(ctx);
          checkDeclaredLength(req.headers['content-length']);
          const row = resolvedProject(resource);
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
      resource: project,
      raw: true,
      schema: { params: IdParams },
      async handler({ resource, reply }, ctx) {
        cloudOnly(ctx);
        const row = resolvedProject(resource);
        const file = await sourceArchivePath(ctx, row.orgId, row.id);
        const meta = await currentForProject(ctx.db, row.orgId, row.id);
        if (!file || !meta?.sha256) throw new AppError('NOT_FOUND', 'this project has no uploaded source');
        const size = (await stat(file)).size;
        reply.header('content-type', 'application/gzip').header('content-length', String(size)).header('x-berth-sha256', meta.sha256);
        await reply.send(createReadStream(file));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/cloud/refs/:kind/:id',
      cloudOnly: true,
      summary: 'Cloud only: the project a backup policy, run or restore or a deployment of the caller\'s org belongs to (a linked instance asks before it forwards a route named by such an id)',
      // Reading which project a record hangs under is reading the record: project:read, checked
      // again on the record's own project (404 missing or another org's, 403 same org).
      tag: 'project:read',
      schema: { params: Obj({ kind: Type.Union(RECORD_REF_KINDS.map((k) => Type.Literal(k))), id: Id }) },
      handler: ({ actor, params }, ctx) => recordRefProject(ctx, actor, params.kind, params.id),
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
      schema: { params: Obj({ sessionId: Id }) },
      async handler({ params, req, reply }, ctx) {
        try {
          if (ctx.config.mode !== 'cloud') throw new AppError('NOT_FOUND', 'route not found');
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
  ],
  async stop(ctx) {
    await closeCloudLink(ctx);
  },
};
