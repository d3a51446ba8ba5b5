import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { routeInfo, type RouteInfo } from '../../src/http/route.js';
import { areaModules } from '../../src/modules/index.js';

/**
 * The seed specification's permission table (seed-api.md, "Endpoints" and "Authentication" 5), restated
 * here as data. The authorization matrix derives each route's expectations from its declaration; this
 * is what checks the declarations themselves against the user's specification, independently of them.
 */
const SEED_TAGS: [route: string, tag: string][] = [
  ['GET /api/projects', 'project:list'],
  ['POST /api/projects', 'project:write'],
  ['GET /api/projects/home', 'project:list'],
  ['POST /api/projects/ensure', 'project:write'],
  ['GET /api/projects/local', 'project:list'],
  ['POST /api/projects/scan', 'project:write'],
  ['POST /api/projects/import', 'project:write'],
  ['GET /api/projects/:id', 'project:read'],
  ['PATCH /api/projects/:id', 'project:write'],
  ['DELETE /api/projects/:id', 'project:admin'],
  ['GET /api/projects/:id/info', 'project:read'],
  ['GET /api/projects/:id/deletion-preview', 'project:read'],
  ['GET /api/projects/:id/environments', 'project:read'],
  ['POST /api/projects/:id/environments', 'project:write'],
  ['POST /api/projects/:id/options', 'project:write'],
  ['POST /api/projects/:id/enable', 'project:write'],
  ['POST /api/projects/:id/disable', 'project:write'],
  ['POST /api/projects/:id/routing/retry', 'project:write'],
  ['GET /api/projects/:id/env', 'project:read'],
  ['PATCH /api/projects/:id/env', 'project:write'],
  ['GET /api/projects/:id/clone-token', 'project:read'],
  ['PATCH /api/projects/:id/clone-token', 'project:admin'],
  ['GET /api/projects/:id/git', 'project:read'],
  ['GET /api/projects/:id/commit-status', 'project:read'],
  ['POST /api/projects/:id/git/link', 'project:write'],
  ['GET /api/projects/:id/branches', 'project:read'],
  ['POST /api/projects/:id/auto-deploy', 'project:write'],
  ['POST /api/projects/:id/webhook-domain', 'project:write'],
  ['POST /api/projects/:id/branch', 'project:write'],
  ['GET /api/projects/:id/resources', 'project:read'],
  ['PATCH /api/projects/:id/resources', 'project:write'],
  ['POST /api/projects/:id/resources', 'project:write'],
  ['POST /api/projects/:id/sleep-mode', 'project:write'],
  ['GET /api/projects/:id/deployments', 'project:deployment:list'],
  ['POST /api/projects/:id/deployment-session', 'project:read'],
  ['POST /api/projects/:id/connect', 'project:write'],
  ['GET /api/projects/:id/logs', 'project:read'],
  ['GET /api/projects/:id/logs/stream', 'project:read'],
  ['GET /api/projects/:id/server-logs/recent', 'project:read'],
  ['GET /api/projects/:id/server-logs/stream-token', 'project:read'],
  ['GET /api/projects/:id/server-logs/stream', 'project:read'],
  ['GET /api/projects/:id/route-rules', 'project:read'],
  ['POST /api/projects/:id/route-rules', 'project:write'],
  ['PATCH /api/projects/:id/route-rules/:ruleId', 'project:write'],
  ['DELETE /api/projects/:id/route-rules/:ruleId', 'project:write'],
  ['POST /api/projects/folder/session', 'project:write'],
  ['POST /api/projects/folder/upload/:sessionId', 'project:write'],
  ['POST /api/projects/folder/scan/:sessionId', 'project:write'],
  ['POST /api/projects/:id/transfer/to-cloud', 'project:admin'],
  ['POST /api/projects/:id/transfer/to-self-hosted', 'project:admin'],
  ['GET /api/permissions/org-meta', 'permissions:read'],
  ['GET /api/permissions/resources', 'permissions:read'],
  ['POST /api/permissions/create-team-org', 'permissions:write'],
  ['POST /api/permissions/invitations/:id/materialize', 'permissions:write'],
  ['GET /api/permissions/grants', 'permissions:read'],
  ['POST /api/permissions/grants', 'permissions:write'],
  ['PUT /api/permissions/grants', 'permissions:write'],
  ['DELETE /api/permissions/grants/:id', 'permissions:admin'],
  ['GET /api/permissions/invitations', 'permissions:read'],
  ['POST /api/permissions/invite-with-grants', 'permissions:write'],
  ['GET /api/gitprovider/status', 'gitprovider:read'],
  ['GET /api/gitprovider/home', 'gitprovider:read'],
  ['GET /api/gitprovider/local-status', 'gitprovider:read'],
  ['GET /api/gitprovider/connect/poll', 'gitprovider:read'],
  ['POST /api/gitprovider/connect', 'gitprovider:write'],
  ['GET /api/gitprovider/connect/redirect', 'public'],
  ['POST /api/gitprovider/disconnect', 'gitprovider:admin'],
  ['GET /api/gitprovider/repos', 'gitprovider:list'],
  ['POST /api/gitprovider/repos', 'gitprovider:write'],
  ['GET /api/gitprovider/orgs/:org/repos', 'gitprovider:list'],
  ['GET /api/gitprovider/repos/:owner/:repo', 'gitprovider:read'],
  ['DELETE /api/gitprovider/repos/:owner/:repo', 'gitprovider:admin'],
  ['GET /api/gitprovider/repos/:owner/:repo/branches', 'gitprovider:list'],
  ['GET /api/gitprovider/repos/:owner/:repo/clone-token', 'gitprovider:read'],
  ['GET /api/gitprovider/repos/:owner/:repo/files', 'gitprovider:list'],
  ['GET /api/gitprovider/repos/:owner/:repo/file', 'gitprovider:read'],
  ['GET /api/gitprovider/repos/:owner/:repo/webhooks', 'gitprovider:list'],
  ['POST /api/gitprovider/repos/:owner/:repo/webhooks', 'gitprovider:write'],
  ['DELETE /api/gitprovider/repos/:owner/:repo/webhooks', 'gitprovider:admin'],
  ['GET /api/projects/:projectId/backup-policies', 'project:write'],
  ['POST /api/projects/:projectId/backup-policies', 'project:write'],
  ['PATCH /api/backup-policies/:policyId', 'backup_destination:backup_policy:write'],
  ['DELETE /api/backup-policies/:policyId', 'backup_destination:backup_policy:write'],
  ['POST /api/backup-policies/:policyId/run', 'backup_destination:backup_policy:write'],
  ['GET /api/projects/:projectId/backup-runs', 'project:write'],
  ['GET /api/backup-runs/:runId', 'backup_destination:backup_run:read'],
  ['GET /api/backup-runs/:runId/stream', 'backup_destination:backup_run:read'],
  ['POST /api/backup-runs/:runId/protect', 'backup_destination:backup_run:write'],
  ['POST /api/backup-runs/:runId/restore/prepare', 'backup_destination:backup_run:write'],
  ['POST /api/backup-restores/:restoreId/apply', 'backup_destination:backup_restore:write'],
  ['POST /api/backup-restores/:restoreId/cancel', 'backup_destination:backup_restore:write'],
  ['GET /api/backup-restores/:restoreId', 'backup_destination:backup_restore:read'],
  ['GET /api/backup-restores/:restoreId/stream', 'backup_destination:backup_restore:read'],
  ['POST /api/webhooks/backup', 'public'],
];

/** Seed "Authentication" 5: the second, in-handler check of routes under a policy, run or restore. */
const SEED_REQUIRES: [route: string, tag: string][] = [
  ['PATCH /api/backup-policies/:policyId', 'project:write'],
  ['POST /api/backup-policies/:policyId/run', 'project:write'],
  ['DELETE /api/backup-policies/:policyId', 'project:admin'],
  ['GET /api/backup-runs/:runId', 'project:read'],
  ['GET /api/backup-runs/:runId/stream', 'project:read'],
  ['POST /api/backup-runs/:runId/protect', 'project:write'],
  ['POST /api/backup-runs/:runId/restore/prepare', 'project:admin'],
  ['POST /api/backup-restores/:restoreId/apply', 'project:admin'],
  ['POST /api/backup-restores/:restoreId/cancel', 'project:admin'],
  ['GET /api/backup-restores/:restoreId', 'project:read'],
  ['GET /api/backup-restores/:restoreId/stream', 'project:read'],
];

/**
 * Where Berth's declaration differs from the seed's table on purpose. The folder-upload relay carries
 * the upload session's own token (minted for a member with project:write, whose access is checked
 * again as the bytes arrive: docs/uploads.md), so the gate lets it through without a credential.
 */
const DELIBERATE: Record<string, string> = {
  'POST /api/projects/folder/upload/:sessionId': 'public',
};

const routes = new Map<string, RouteInfo>(areaModules.flatMap((m) => m.routes.map((r) => {
  const i = routeInfo(r);
  return [`${i.method} ${i.url}`, i] as const;
})));

describe("the route declarations against the seed's permission table", () => {
  it('every route of the seed exists and declares the seed\'s permission tag (public where the seed says public)', () => {
    const wrong: string[] = [];
    for (const [route, tag] of SEED_TAGS) {
      const info = routes.get(route);
      if (!info) {
        wrong.push(`${route}: not registered`);
        continue;
      }
      const declared = info.access === 'public' ? 'public' : info.tag;
      const want = DELIBERATE[route] ?? tag;
      if (declared !== want) wrong.push(`${route}: declares ${declared}, the seed says ${tag}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('every route of Authentication 5 requires the seed\'s tag on the parent project, after its own tag', () => {
    const wrong: string[] = [];
    for (const [route, tag] of SEED_REQUIRES) {
      const info = routes.get(route);
      const has = info?.requires.some((r) => r.tag === tag && r.on === 'project');
      if (!has) wrong.push(`${route}: requires ${JSON.stringify(info?.requires ?? null)}, the seed says ${tag} on the project`);
    }
    assert.deepEqual(wrong, []);
  });
});
