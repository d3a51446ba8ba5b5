import { randomString } from '../../../src/lib/ids.js';
import { findPolicy, findRun, findRestore } from '../../../src/modules/backups/backups.store.js';
import { cancelRestore, prepareRestore } from '../../../src/modules/backups/restores.service.js';
import { executeRun } from '../../../src/modules/backups/run-executor.js';
import { triggerRun } from '../../../src/modules/backups/runs.service.js';
import { actorOf, createDestination, createPolicy, createProject } from '../../support/factories.js';
import { tempDir } from '../../support/harness.js';
import { ownerFor } from '../fixtures.js';
import { PRINCIPALS, type Fixture, type FixtureInput, type MatrixRow, type PrincipalName } from '../matrix.js';

/** A project of org A (or B) with a local destination; restricted principals get grants on both. */
async function projectWithDestination({ world, which }: FixtureInput) {
  const owner = ownerFor(world, which);
  const ctx = world.server.ctx;
  const p = await createProject(world.server, owner, { name: `mx-bk-${randomString(6)}` });
  const d = await createDestination(world.server, owner, { name: `mx-${randomString(4)}` });
  return { owner, actor: actorOf(owner), world, ctx, projectId: p.id, destinationId: d.id };
}

async function policyOf(input: FixtureInput) {
  const base = await projectWithDestination(input);
  const pol = await createPolicy(base.world.server, base.owner, { id: base.projectId }, { destinationId: base.destinationId });
  return { ...base, policyId: pol.id };
}

/** A succeeded run with a real artifact (executed in place: the matrix server runs no workers). */
async function runOf(input: FixtureInput) {
  const base = await policyOf(input);
  const policy = (await findPolicy(base.ctx.db, base.owner.orgId, base.policyId))!;
  const { runId } = await triggerRun(base.ctx, policy, 'manual');
  await executeRun(base.ctx, runId, base.owner.orgId);
  const run = (await findRun(base.ctx.db, base.owner.orgId, runId))!;
  if (run.status !== 'succeeded') throw new Error(`fixture run ${run.status}: ${run.error}`);
  return { ...base, run };
}

const projectKey = (id: string) => [{ type: 'project' as const, id }];

export const fixtures: Record<string, Fixture> = {
  backupDestination: {
    missingId: 'bkd_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const d = await createDestination(world.server, owner, { name: `mx-${randomString(4)}` });
      return { params: { id: d.id }, grantKeys: [{ type: 'backup_destination', id: d.id }] };
    },
  },
  /** A project and a destination (policy create needs read on the destination too). */
  backupProject: {
    missingId: 'prj_missing0000000000000',
    async make(input) {
      const b = await projectWithDestination(input);
      return {
        params: { projectId: b.projectId },
        grantKeys: [...projectKey(b.projectId), { type: 'backup_destination', id: b.destinationId }],
        data: { destinationId: b.destinationId },
      };
    },
  },
  backupPolicy: {
    missingId: 'bkp_missing0000000000000',
    async make(input) {
      const b = await policyOf(input);
      return { params: { policyId: b.policyId }, grantKeys: projectKey(b.projectId) };
    },
  },
  backupRun: {
    missingId: 'bkr_missing0000000000000',
    async make(input) {
      const b = await runOf(input);
      return { params: { runId: b.run.id }, grantKeys: projectKey(b.projectId) };
    },
  },
  /** A staged restore (its confirmation token in `data`). */
  backupRestore: {
    missingId: 'bks_missing0000000000000',
    async make(input) {
      const b = await runOf(input);
      const prep = await prepareRestore(b.ctx, b.actor, b.run);
      return { params: { restoreId: prep.restoreId }, grantKeys: projectKey(b.projectId), data: { confirmationToken: prep.confirmationToken } };
    },
  },
  /** A cancelled (terminal) restore: its stream answers snapshot + complete and closes. */
  backupRestoreDone: {
    missingId: 'bks_missing0000000000000',
    async make(input) {
      const b = await runOf(input);
      const prep = await prepareRestore(b.ctx, b.actor, b.run);
      const row = (await findRestore(b.ctx.db, b.owner.orgId, prep.restoreId))!;
      await cancelRestore(b.ctx, row);
      return { params: { restoreId: prep.restoreId }, grantKeys: projectKey(b.projectId) };
    },
  },
};

const everyone404 = Object.fromEntries(PRINCIPALS.map((p) => [p, 404])) as Record<PrincipalName, number>;

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/backup-destinations', note: 'restricted members get only the destinations they can read' },
  { method: 'POST', path: '/api/backup-destinations', body: () => ({ name: `mx-${randomString(4)}`, kind: 'local', path: tempDir('berth-mx-dest-') }), note: 'backup_destination:write without a record: no `*` grant here' },
  { method: 'GET', path: '/api/backup-destinations/:id', fixture: 'backupDestination' },
  { method: 'PATCH', path: '/api/backup-destinations/:id', fixture: 'backupDestination', body: { name: 'mx-renamed' } },
  { method: 'DELETE', path: '/api/backup-destinations/:id', fixture: 'backupDestination', fresh: true },
  { method: 'POST', path: '/api/backup-destinations/:id/test', fixture: 'backupDestination' },

  { method: 'GET', path: '/api/projects/:projectId/backup-policies', fixture: 'project', note: 'seed: project:write' },
  { method: 'POST', path: '/api/projects/:projectId/backup-policies', fixture: 'backupProject', body: (rec) => ({ destinationId: rec?.data?.destinationId }) },
  { method: 'PATCH', path: '/api/backup-policies/:policyId', fixture: 'backupPolicy', body: { retainCount: 3 } },
  { method: 'DELETE', path: '/api/backup-policies/:policyId', fixture: 'backupPolicy', fresh: true, note: 'requires admin on the parent project' },
  { method: 'POST', path: '/api/backup-policies/:policyId/run', fixture: 'backupPolicy', note: 'requires write on the parent project' },

  { method: 'GET', path: '/api/projects/:projectId/backup-runs', fixture: 'project', note: 'seed: project:write' },
  { method: 'GET', path: '/api/backup-runs/:runId', fixture: 'backupRun' },
  { method: 'GET', path: '/api/backup-runs/:runId/stream', fixture: 'backupRun', note: 'terminal run: snapshot + complete, then close' },
  { method: 'POST', path: '/api/backup-runs/:runId/protect', fixture: 'backupRun', body: { protected: true } },
  { method: 'POST', path: '/api/backup-runs/:runId/cancel', fixture: 'backupRun', note: '409 for a finished run' },
  { method: 'POST', path: '/api/backup-runs/:runId/restore/prepare', fixture: 'backupRun', body: {}, note: 'requires admin on the parent project' },

  { method: 'POST', path: '/api/backup-restores/:restoreId/apply', fixture: 'backupRestore', fresh: true, body: (rec) => ({ confirmationToken: rec?.data?.confirmationToken }) },
  { method: 'POST', path: '/api/backup-restores/:restoreId/cancel', fixture: 'backupRestore', fresh: true },
  { method: 'GET', path: '/api/backup-restores/:restoreId', fixture: 'backupRestoreDone' },
  { method: 'GET', path: '/api/backup-restores/:restoreId/stream', fixture: 'backupRestoreDone' },

  { method: 'POST', path: '/api/webhooks/backup', expect: everyone404, note: 'public; a non-webhook credential is the same opaque 404 as every failure' },
];
