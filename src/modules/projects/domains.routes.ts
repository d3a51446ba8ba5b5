import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import * as domains from './domains.service.js';
import { DomainDeletedSchema, DomainSchema } from './projects.presenters.js';
import { ProjectParams } from './projects.schemas.js';

const P = { kind: 'project', param: 'id' } as const;

const DomainParams = Obj({ id: Id, domain: Str({ min: 1, max: 260 }) });
const DomainAddBody = Obj({ domain: Str({ min: 1, max: 260 }), primary: Type.Optional(Type.Boolean()) });

/** Custom domains of a project (contract section 12); `connect` (seed) is in config.routes.ts. */
export const domainRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/domains',
    summary: 'List the custom domains of a project, with the TXT record that verifies each unverified one',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: Type.Array(DomainSchema) },
    async handler({ resource }, ctx) {
      return domains.listDomains(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/domains',
    summary: 'Add a custom domain (verified at once, or once its TXT record is checked)',
    tag: 'project:write',
    resource: P,
    status: 201,
    schema: { params: ProjectParams, body: DomainAddBody, response: DomainSchema },
    async handler({ actor, body, resource }, ctx) {
      return domains.addDomain(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id/domains/:domain',
    summary: 'Remove a custom domain (when it was primary, the free domain serves as primary)',
    tag: 'project:write',
    resource: P,
    schema: { params: DomainParams, response: DomainDeletedSchema },
    async handler({ actor, params, resource }, ctx) {
      return domains.removeDomain(ctx, actor, resource.record, params.domain);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/domains/:domain/verify',
    summary: 'Verify a custom domain by its TXT record _berth-challenge.<domain>',
    tag: 'project:write',
    resource: P,
    schema: { params: DomainParams, response: DomainSchema },
    async handler({ actor, params, resource }, ctx) {
      return domains.verifyDomain(ctx, actor, resource.record, params.domain);
    },
  }),
];
