import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareRuns, formatComparison } from '../../bench/compare.js';
import type { Row } from '../../bench/lib.js';

const row = (metric: string, value: number, extra: Partial<Row> = {}): Row => ({ bench: 'b', metric, value, unit: 'ms', ...extra });

describe('bench --compare', () => {
  it('names a figure that moved by more than 15 % and leaves one that moved less', () => {
    const c = compareRuns([row('wake p50', 100), row('steady', 100)], [row('wake p50', 130), row('steady', 110)]);
    assert.deepEqual(c.moved.map((m) => [m.metric, m.verdict]), [['wake p50', 'worse']]);
    assert.equal(c.compared, 2);
  });

  it('compares the ratio when both runs have one, so a slower machine alone moves nothing', () => {
    const before = [row('edge req/s', 20000, { unit: 'req/s', reference: 40000, ratio: 0.5, target: '>= 0.5 x nginx' })];
    const after = [row('edge req/s', 10000, { unit: 'req/s', reference: 20000, ratio: 0.5, target: '>= 0.5 x nginx' })];
    assert.equal(compareRuns(before, after).moved.length, 0);
  });

  it('reads which way is better from a ratio target, the unit, and a ratio written reference / value', () => {
    const before = [
      row('restore', 50, { unit: 'MiB/s', reference: 50, ratio: 1, target: '>= 0.9' }),
      row('rss', 100, { unit: 'MB', reference: 100, ratio: 1, target: '<= 1.02' }),
      row('scan', 100, { reference: 50, ratio: 0.5 }),
    ];
    const after = [
      row('restore', 35, { unit: 'MiB/s', reference: 50, ratio: 0.7, target: '>= 0.9' }),
      row('rss', 130, { unit: 'MB', reference: 100, ratio: 1.3, target: '<= 1.02' }),
      row('scan', 50, { reference: 50, ratio: 1 }),
    ];
    const verdicts = Object.fromEntries(compareRuns(before, after).moved.map((m) => [m.metric, m.verdict]));
    assert.deepEqual(verdicts, { restore: 'worse', rss: 'worse', scan: 'better' });
  });

  it('lists rows only one run has, and prints the earlier run it compared with', () => {
    const c = compareRuns([row('old', 1)], [row('new', 1)]);
    assert.deepEqual([c.added, c.gone], [['b · new'], ['b · old']]);
    const text = formatComparison(c, { at: '2026-11-29T01:00:00Z', commit: 'abcdef1234', load: { start: 0.3, end: 0.9 }, rows: [] });
    assert.match(text, /2026-11-29T01:00:00Z \(abcdef12\), load 0\.3-0\.9/);
    assert.match(text, /new {5}b · new/);
  });
});
