// @store-independent: nftables in a network namespace of its own, no database
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { NftWatch } from '../../src/runtime/nft-watch.js';

const NS = `berth-nftw-${process.pid}`;
const hasNft = spawnSync('nft', ['--version']).status === 0;
const asRoot = process.getuid?.() === 0;
const inNs = ['ip', 'netns', 'exec', NS, 'nft'];
const nft = (...args: string[]) => execFileSync(inNs[0]!, [...inNs.slice(1), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
const nftIn = (input: string) => execFileSync(inNs[0]!, [...inNs.slice(1), '-f', '-'], { input });
const RULES = 'table inet berth {\n  set svc_pairs { type ipv4_addr . ipv4_addr . inet_service; }\n  chain forward { type filter hook forward priority -10; policy accept; }\n}\n';

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function watchOf(removed: () => void, bin = inNs) {
  return new NftWatch(bin, 'inet berth', {
    run: async (args) => void execFileSync(bin[0]!, [...bin.slice(1), ...args], { stdio: 'ignore' }),
    check: async () => spawnSync(inNs[0]!, [...inNs.slice(1), 'list', 'set', 'inet', 'berth', 'svc_pairs']).status === 0,
    removed,
  });
}

describe('watching the host rules without a process per box', { skip: (!asRoot || !hasNft) && 'needs root and nft' }, () => {
  before(() => {
    execFileSync('ip', ['netns', 'add', NS]);
  });
  after(() => {
    spawnSync('ip', ['netns', 'delete', NS]);
  });

  it('counts the rules intact once the monitor listens and has seen them, and not after a flush of the ruleset', async () => {
    nftIn(RULES);
    let removed = 0;
    const w = watchOf(() => removed++);
    try {
      await w.start();
      assert.equal(w.intact, true);
      nft('flush', 'ruleset');
      await until('the removal to be reported', () => removed > 0);
      assert.equal(w.intact, false);
      // Put back and checked again: trusted again.
      nftIn(RULES);
      assert.equal(await w.confirm(), true);
      assert.equal(w.intact, true);
    } finally {
      w.stop();
    }
  });

  it('reports the removal of a chain or set of the table, and ignores other tables', async () => {
    nftIn(RULES);
    nftIn('table inet berth-docker {\n  chain forward { type filter hook forward priority 0; policy accept; }\n}\n');
    let removed = 0;
    const w = watchOf(() => removed++);
    try {
      await w.start();
      nft('delete', 'table', 'inet', 'berth-docker');
      // A later removal of ours is reported in order after it: the other table's was ignored.
      nft('delete', 'chain', 'inet', 'berth', 'forward');
      await until('the chain removal', () => removed > 0);
      assert.equal(removed, 1);
      assert.equal(w.intact, false);
      nftIn(RULES);
      await w.confirm();
      nft('delete', 'set', 'inet', 'berth', 'svc_pairs');
      await until('the set removal', () => removed > 1);
      assert.equal(w.intact, false);
    } finally {
      w.stop();
    }
  });

  it('is never intact when the rules are missing at start, when its monitor cannot run, or once stopped', async () => {
    spawnSync(inNs[0]!, [...inNs.slice(1), 'flush', 'ruleset']);
    const missing = watchOf(() => {});
    await missing.start();
    assert.equal(missing.intact, false);
    missing.stop();

    const broken = watchOf(() => {}, ['/nonexistent/nft']);
    await broken.start();
    assert.equal(broken.intact, false);
    broken.stop();

    nftIn(RULES);
    const w = watchOf(() => {});
    try {
      await w.start();
      // start() waits at most 5 s for the monitor to listen; on a loaded machine it may take longer.
      await until('the watch to count the rules intact', () => w.intact, 20_000);
    } finally {
      // A failure must not leave the monitor's process running (the test file would never exit).
      w.stop();
    }
    assert.equal(w.intact, false);
  });
});
