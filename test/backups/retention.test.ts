import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { planRetention, type RetentionRun } from '../../src/modules/backups/retention.js';

const STATUSES = ['queued', 'running', 'uploading', 'verifying', 'succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled', 'server_error'];
const NOW = new Date('2026-06-01T00:00:00.000Z');

const runArb = fc.record({
  status: fc.constantFrom(...STATUSES),
  protected: fc.boolean(),
  ageHours: fc.integer({ min: 0, max: 24 * 60 }),
  restoring: fc.boolean(),
});

const historyArb = fc.record({
  runs: fc.array(runArb, { maxLength: 40 }),
  retainCount: fc.option(fc.integer({ min: 1, max: 10 }), { nil: null }),
  retainDays: fc.option(fc.integer({ min: 1, max: 30 }), { nil: null }),
  listing: fc.constantFrom('ok', 'failed', 'empty'),
});

describe('retention (property: 1000 random histories)', () => {
  it('never prunes a protected run, a run in flight, a run being restored or the newest success; a failed or empty listing prunes nothing', () => {
    fc.assert(
      fc.property(historyArb, (h) => {
        const runs: RetentionRun[] = h.runs.map((r, i) => ({
          id: `r${i}`,
          status: r.status,
          protected: r.protected,
          at: new Date(NOW.getTime() - r.ageHours * 3600_000).toISOString(),
          artifactKey: r.status === 'succeeded' ? `k/r${i}` : null,
        }));
        const restoring = new Set(h.runs.flatMap((r, i) => (r.restoring && r.status === 'succeeded' ? [`r${i}`] : [])));
        const listing = h.listing === 'failed' ? null : h.listing === 'empty' ? [] : runs.filter((r) => r.artifactKey).map((r) => r.artifactKey!);
        const plan = planRetention({ runs, restoring, listing, retainCount: h.retainCount, retainDays: h.retainDays, now: NOW });
        const pruned = new Set(plan.prune);
        assert.equal(pruned.size, plan.prune.length, 'no duplicates');
        const byId = new Map(runs.map((r) => [r.id, r]));
        const succeeded = runs.filter((r) => r.status === 'succeeded').sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : a.id < b.id ? 1 : -1));
        for (const id of pruned) {
          const r = byId.get(id)!;
          assert.ok(r, 'prunes only known runs');
          assert.equal(r.protected, false, 'never a protected run');
          assert.ok(['succeeded', 'failed', 'cancelled', 'server_error'].includes(r.status), 'never a run in flight');
          assert.ok(!restoring.has(id), 'never a run being restored');
          assert.notEqual(id, succeeded[0]?.id, 'never the newest succeeded run');
        }
        if (listing === null || (listing.length === 0 && succeeded.length > 0)) {
          assert.equal(plan.prune.length, 0, 'a failed or empty listing aborts');
          assert.ok(plan.aborted);
        }
        if (h.retainCount == null && h.retainDays == null) assert.equal(plan.prune.length, 0, 'no rule, nothing pruned');
        // Every pruned success is beyond the count or older than the days.
        const unprotected = succeeded.filter((r) => !r.protected);
        const cutoff = h.retainDays != null ? new Date(NOW.getTime() - h.retainDays * 86400_000).toISOString() : null;
        for (const id of pruned) {
          const r = byId.get(id)!;
          if (r.status !== 'succeeded') continue;
          const rank = unprotected.findIndex((x) => x.id === id);
          const beyond = h.retainCount != null && rank >= h.retainCount;
          const old = cutoff != null && r.at < cutoff;
          assert.ok(beyond || old, 'pruned only by a rule');
        }
        // Count rule: at least min(retainCount, unprotected successes) unprotected successes survive.
        if (h.retainCount != null) {
          const kept = unprotected.filter((r) => !pruned.has(r.id));
          const keptRecent = kept.filter((r) => cutoff == null || r.at >= cutoff);
          const recent = unprotected.filter((r) => cutoff == null || r.at >= cutoff);
          assert.ok(keptRecent.length >= Math.min(h.retainCount, recent.length), 'the count rule keeps the newest runs');
        }
        // Something always survives when there was a success.
        if (succeeded.length > 0) assert.ok(succeeded.some((r) => !pruned.has(r.id)), 'never everything');
      }),
      { numRuns: 1000 },
    );
  });

  it('prunes by count and by days in an example history', () => {
    const at = (h: number) => new Date(NOW.getTime() - h * 3600_000).toISOString();
    const runs: RetentionRun[] = [
      { id: 'a', status: 'succeeded', protected: false, at: at(1), artifactKey: 'a' },
      { id: 'b', status: 'succeeded', protected: true, at: at(2), artifactKey: 'b' },
      { id: 'c', status: 'succeeded', protected: false, at: at(3), artifactKey: 'c' },
      { id: 'd', status: 'succeeded', protected: false, at: at(4), artifactKey: 'd' },
      { id: 'e', status: 'running', protected: false, at: at(0), artifactKey: null },
      { id: 'f', status: 'failed', protected: false, at: at(24 * 40), artifactKey: null },
    ];
    const keys = ['a', 'b', 'c', 'd'];
    assert.deepEqual(planRetention({ runs, restoring: new Set(), listing: keys, retainCount: 2, retainDays: null, now: NOW }).prune, ['d']);
    assert.deepEqual(planRetention({ runs, restoring: new Set(['d']), listing: keys, retainCount: 2, retainDays: null, now: NOW }).prune, []);
    assert.deepEqual(planRetention({ runs, restoring: new Set(), listing: keys, retainCount: null, retainDays: 30, now: NOW }).prune, ['f']);
    assert.deepEqual(planRetention({ runs, restoring: new Set(), listing: [], retainCount: 1, retainDays: null, now: NOW }).prune, []);
    assert.deepEqual(planRetention({ runs, restoring: new Set(), listing: null, retainCount: 1, retainDays: null, now: NOW }).prune, []);
  });
});
