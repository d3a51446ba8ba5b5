import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { closeAfterAnswer } from '../../http/close-after-answer.js';
import { defineRoute, type ModuleDef } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { ProjectSchema } from '../projects/index.js';
import * as local from './local.service.js';
import { authenticateUpload, checkContentType, checkDeclaredLength, receiveUpload } from './relay.service.js';
import { createSession, resolveSession } from './sessions.service.js';
import { attachUploadToProject, checkUploadSession, scanSession } from './source.service.js';
import { sweepUploads } from './sweep.service.js';
import { InFlightUploads } from './upload-quota.js';
import { SWEEP_EVERY_MS, UPLOAD_CONTENT_TYPES, UPLOAD_TOKEN_HEADER, uploadsRoot } from './upload-layout.js';
import { LocalScanSchema, ScanSchema, SessionSchema, UploadSchema } from './uploads.presenters.js';
import * as store from './uploads.store.js';

const SessionParams = Obj({ sessionId: Id });

/** Folder uploads (sessions, the relay, scans) and the local-folder routes. */
const routes = [
  defineRoute({
    method: 'POST',
    url: '/api/projects/folder/session',
    summary: 'Open a folder-upload session (step 1): answers the upload target { url, method, headers }',
    // project:write on the body's `projectId` (404 another org's or missing, 403 not allowed), or on
    // the org when it names none (the upload will make a new project).
    tag: 'project:write',
    resource: { kind: 'project', body: 'projectId', optional: true },
    status: 201,
    schema: {
      body: Obj({
        name: Type.Optional(Str({ max: 100 })),
        projectId: Type.Optional(Id),
        sizeBytes: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
      }),
      response: SessionSchema,
    },
    async handler({ actor, body, resource }, ctx) {
      return createSession(ctx, actor, body ?? {}, { project: resource?.record });
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/folder/upload/:sessionId',
    summary: 'Self-hosted relay of the gzipped tarball (at most 300 MB); authenticated by the session upload token header',
    tag: 'project:write',
    // Public on purpose: the credential is the session's upload token (x-berth-upload-token), not a
    // bearer or cookie. It was minted for one session by a project:write caller, lives an hour and
    // uploads once; authenticateUpload checks it in constant time and re-checks that the session's
    // creator may still write the project (project:write) before a byte of the body is read. The
    // gate's `stream-token` access does not fit: that is for read streams and the minter's bearer.
    access: 'public',
    selfHostedOnly: true,
    streamBody: UPLOAD_CONTENT_TYPES,
    schema: { params: SessionParams, response: UploadSchema },
    async handler({ params, req, reply }, ctx) {
      try {
        // The credential first (no bearer ever opens the relay), then type and declared size,
        // all before a byte of the body is read.
        const token = req.headers[UPLOAD_TOKEN_HEADER];
        const row = await authenticateUpload(ctx, params.sessionId, typeof token === 'string' ? token : undefined);
        checkContentType(req.headers['content-type']);
        checkDeclaredLength(req.headers['content-length']);
        return await receiveUpload(ctx, row, req.raw.iterator({ destroyOnReturn: false }));
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
    schema: { params: SessionParams, response: ScanSchema },
    async handler({ resource }, ctx) {
      return scanSession(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/local',
    summary: 'List the projects whose source is a local folder',
    tag: 'project:list',
    selfHostedOnly: true,
    schema: { response: Type.Array(ProjectSchema) },
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
    schema: { body: Obj({ path: Str({ min: 1, max: 4096 }) }), response: LocalScanSchema },
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
    schema: { body: Obj({ path: Str({ min: 1, max: 4096 }), name: Type.Optional(Str({ min: 1, max: 100 })) }), response: ProjectSchema },
    async handler({ actor, body }, ctx) {
      return local.importLocal(ctx, actor, body);
    },
  }),
];

export const uploadsModule: ModuleDef = {
  name: 'uploads',
  resolvers: { upload_session: resolveSession },
  routes,
  state: () => ({ uploads: { inFlight: new InFlightUploads() } }),
  provides: () => ({
    // POST /api/projects/ensure with `sessionId` (projects area): the upload becomes the project's source.
    uploadSource: {
      check: (ctx, orgId, sessionId) => checkUploadSession(ctx, orgId, sessionId),
      attach: (ctx, actorId, orgId, projectId, sessionId) => attachUploadToProject(ctx, actorId, orgId, projectId, sessionId),
    },
    projectDependents: [
      {
        name: 'uploadSessions',
        preview: (db, orgId, projectId) => store.countForProject(db, orgId, projectId),
        remove: (tx, orgId, projectId) => store.deleteForProject(tx, orgId, projectId),
        paths: (c, _orgId, projectId) => [path.join(uploadsRoot(c), path.basename(projectId))],
      },
    ],
  }),
  init(ctx) {
    ctx.scheduler.add({ name: 'uploads.sweep', everyMs: SWEEP_EVERY_MS, run: async () => void (await sweepUploads(ctx)) });
  },
};
