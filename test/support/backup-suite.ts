import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { waitTerminal } from '../backups/helpers.js';
import { testClock, type TestClock } from './clock.js';
import { createDestination, createTeam, type TestOrg } from './factories.js';
import { startTestServer, type TestServer } from './harness.js';

export interface BackupSuite {
  readonly server: TestServer;
  readonly team: TestOrg;
  /** A local destination of the team's. */
  readonly dest: { id: string; dir: string };
  /** The server's clock: a case moves it forward instead of rewriting times in the database. */
  readonly clock: TestClock;
  api(token?: string): ReturnType<TestServer['api']>;
  /** A policy of the project's to the local destination (201 asserted). */
  policyFor(projectId: string, body?: Record<string, unknown>): Promise<any>;
  /** Triggers a policy's run and waits for it to end; answers the run. */
  runNow(policyId: string): Promise<any>;
}

/**
 * The backup suites' server (background jobs on, a test clock), team and local destination, started
 * in the suite's `before` and closed in its `after`; each case makes its own project and policy.
 * The answer's fields are readable once `before` has run.
 */
export function useBackupServer(): BackupSuite {
  let server: TestServer;
  let team: TestOrg;
  let dest: { id: string; dir: string };
  const clock = testClock();
  before(async () => {
    server = await startTestServer({ background: true, clock });
    team = await createTeam(server);
    dest = await createDestination(server, team.owner);
  });
  after(() => server.close());
  const api = (t = team.owner.token) => server.api(t);
  return {
    get server() {
      return server;
    },
    get team() {
      return team;
    },
    get dest() {
      return dest;
    },
    clock,
    api,
    async policyFor(projectId, body = {}) {
      const res = await api().post(`/api/projects/${projectId}/backup-policies`, { destinationId: dest.id, ...body });
      assert.equal(res.status, 201, res.text);
      return res.body.data;
    },
    async runNow(policyId) {
      const res = await api().post(`/api/backup-policies/${policyId}/run`);
      assert.ok(res.status === 201 || res.status === 200, res.text);
      return waitTerminal(server, team.owner.token, `/api/backup-runs/${res.body.data.runId}`);
    },
  };
}
