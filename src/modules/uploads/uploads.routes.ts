import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineRoute, type ModuleDef } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { registerProjectDependent } from '../projects/dependents.js';
import * as local from './local.service.js';
import * as uploads from './uploads.service.js';
import * as store from './uploads.store.js';
import type { UploadSessionRow } from './uploads.store.js';

const SessionParams = Obj({ sessionId: Id });

/**
 * After an early answer (413, 400, 401 while the body is still arriving): close the connection once
 * the answer is written, so the client can read it, and stop storing the rest at once. A plain close
 * with unread bytes in the socket would send a TCP reset that can destroy the answer in flight at the
 * client, so the close lingers: the server sends its FIN (half-close), discards whatever still
 * arrives, and destroys the socket when the client closes or after 2 s.
 */
export function closeAfterAnswer(req: FastifyRequest, reply: FastifyReply): void {
  if (req.raw.readableEnded) return;
  const socket = req.raw.socket;
  if (!socket) return;
  reply.header('connection', 'close');
  // Node's server calls destroySoon() after a `Connection: close` answer: half-close instead.
  (socket as unknown as { destroySoon: () => void }).destroySoon = () => socket.end();
  reply.raw.once('finish', () => {
    req.raw.resume();
    socket.resume();
    const t = setTimeout(() => socket.destroy(), 2000);
    t.unref();
    socket.once('close', () => clearTimeout(t));
    socket.once('end', () => socket.destroy());
  });
}

export const uploadsModule: ModuleDef = {
  name: 'uploads',
  resolvers: { upload_session: uploads.resolveSession },
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/projects/folder/session',
      summary: 'Open a folder-upload session (step 1): answers the upload target { url, method, headers }',
      tag: 'project:write',
      // `projectId` in the body names the project: the service authorizes on it (404 other org, 403 no write).
      access: 'member',
      status: 201,
      schema: {
        body: Obj({
          name: Type.Optional(Str({ max: 100 })),
          projectId: Type.Optional(Id),
          sizeBytes: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
        }),
      },
      async handler({ actor, body }, ctx) {
        return uploads.createSession(ctx, actor, body ?? {});
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/folder/upload/:sessionId',
      summary: 'Self-hosted relay of the gzipped tarball (at most 300 MB); authenticated by the session upload token header',
      tag: 'project:write',
      // The credential is the session's upload token (x-berth-upload-token), minted for a project:write
      // caller and checked in constant time by the service; the gate has no bearer to check here.
      access: 'public',
      selfHostedOnly: true,
      streamBody: uploads.UPLOAD_CONTENT_TYPES,
      schema: { params: SessionParams },
      async handler({ params, req, reply }, ctx) {
        try {
          // The credential first (no bearer ever opens the relay), then type and declared size,
          // all before a byte of the body is read.
          const token = req.headers[uploads.UPLOAD_TOKEN_HEADER];
          const row = await uploads.authenticateUpload(ctx, params.sessionId, typeof token === 'string' ? token : undefined);
          uploads.checkContentType(req.headers['content-type']);
          uploads.checkDeclaredLength(req.headers['content-length']);
          return await uploads.receiveUpload(ctx, row, req.raw.iterator({ destroyOnReturn: false }));
        } catch (e) {
          closeAfterAnswer(req, reply);
          throw e;
        }
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/folder/scan/:sessionId',
      summary: 'Detect the build config of an uploaded folder (step 2)',
      tag: 'project:write',
      resource: { kind: 'upload_session', param: 'sessionId' },
      schema: { params: SessionParams },
      async handler({ resource }, ctx) {
        return uploads.scanSession(ctx, resource!.record as UploadSessionRow);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/local',
      summary: 'List the projects whose source is a local folder',
      tag: 'project:list',
      selfHostedOnly: true,
      async handler({ actor }, ctx) {
        return local.listLocal(ctx, actor);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/scan',
      summary: 'Detect the build config of a local folder inside BERTH_LOCAL_ROOTS',
      tag: 'project:write',
      selfHostedOnly: true,
      schema: { body: Obj({ path: Str({ min: 1, max: 4096 }) }) },
      async handler({ body }, ctx) {
        return local.scanLocal(ctx, body);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/import',
      summary: 'Import a local folder inside BERTH_LOCAL_ROOTS as a project (source type local)',
      tag: 'project:write',
      selfHostedOnly: true,
      status: 201,
      schema: { body: Obj({ path: Str({ min: 1, max: 4096 }), name: Type.Optional(Str({ min: 1, max: 100 })) }) },
      async handler({ actor, body }, ctx) {
        return local.importLocal(ctx, actor, body);
      },
    }),
  ],
  init(ctx) {
    ctx.scheduler.add({ name: 'uploads.sweep', everyMs: uploads.SWEEP_EVERY_MS, run: async () => void (await uploads.sweepUploads(ctx)) });
    registerProjectDependent({
      name: 'uploadSessions',
      preview: (db, orgId, projectId) => store.countForProject(db, orgId, projectId),
      remove: (tx, orgId, projectId) => store.deleteForProject(tx, orgId, projectId),
      paths: (c, _orgId, projectId) => [path.join(uploads.uploadsRoot(c), path.basename(projectId))],
    });
  },
};
