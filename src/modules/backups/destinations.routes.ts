import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Nullable, Obj, Str } from '../../http/schemas.js';
import { Deleted, Destination, DestinationTest, destinationView } from './backups.presenters.js';
import * as svc from './destinations.service.js';

/** Routes of backup destinations (`/api/backup-destinations`). */

const Kind = Type.Union([Type.Literal('local'), Type.Literal('s3')]);
const fields = {
  path: Type.Optional(Str({ min: 1, max: 1024 })),
  endpoint: Type.Optional(Nullable(Str({ max: 512 }))),
  region: Type.Optional(Str({ max: 64 })),
  bucket: Type.Optional(Str({ min: 3, max: 63 })),
  prefix: Type.Optional(Str({ max: 512 })),
  accessKeyId: Type.Optional(Str({ min: 1, max: 256 })),
  secretAccessKey: Type.Optional(Str({ min: 1, max: 512 })),
  forcePathStyle: Type.Optional(Type.Boolean()),
};
const DestinationCreate = Obj({ name: Str({ min: 1, max: 100 }), kind: Kind, ...fields });
const DestinationPatch = Obj({ name: Type.Optional(Str({ min: 1, max: 100 })), kind: Type.Optional(Kind), ...fields });
const Params = Obj({ id: Id });
const resource = { kind: 'backup_destination', param: 'id' } as const;

export const destinationRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/backup-destinations',
    summary: 'List backup destinations (secrets masked)',
    tag: 'backup_destination:list',
    schema: { response: Type.Array(Destination) },
    handler: ({ actor }, ctx) => svc.listDestinations(ctx, actor),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-destinations',
    summary: 'Create a backup destination (a local folder or an S3-compatible bucket)',
    tag: 'backup_destination:write',
    status: 201,
    schema: { body: DestinationCreate, response: Destination },
    handler: ({ actor, body }, ctx) => svc.createDestination(ctx, actor, body),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/backup-destinations/:id',
    summary: 'Get one backup destination (secrets masked)',
    tag: 'backup_destination:read',
    resource,
    schema: { params: Params, response: Destination },
    handler: ({ resource }) => destinationView(resource.record),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/backup-destinations/:id',
    summary: 'Update a backup destination',
    tag: 'backup_destination:write',
    resource,
    schema: { params: Params, body: DestinationPatch, response: Destination },
    handler: ({ actor, resource, body }, ctx) => svc.updateDestination(ctx, actor, resource.record, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/backup-destinations/:id',
    summary: 'Delete a backup destination no policy or kept run uses',
    tag: 'backup_destination:admin',
    resource,
    schema: { params: Params, response: Deleted },
    handler: ({ actor, resource }, ctx) => svc.deleteDestination(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-destinations/:id/test',
    summary: 'Write, read back and delete a probe object',
    tag: 'backup_destination:write',
    resource,
    schema: { params: Params, response: DestinationTest },
    handler: ({ resource }, ctx) => svc.testDestination(ctx, resource.record),
  }),
];
