// @store-independent: the runtime's network namespaces, the same on either store.
/**
 * Spare network namespaces (docs/runtime.md "Network"): a box's namespace, once released, leaves a
 * spare made for the same port, which the next box with that port gets instead of a new one; a spare
 * is set up exactly like a new namespace (its input admits the host side on its own port only), is
 * never handed out twice, never serves another port, and `close` leaves none behind.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { HostFirewall } from '../../src/runtime/host-firewall.js';
import { NetworkPool, type NetNamespace } from '../../src/runtime/netns.js';
import { findSandboxBins } from '../../src/runtime/sandbox-driver.js';
import { waitFor } from '../support/wait.js';

const bins = findSandboxBins();
const skip = process.getuid?.() !== 0 || !bins.ip || !bins.nft || !bins.nsenter ? 'needs root, ip, nft and nsenter' : false;

/** The input rules inside the namespace, as nft lists them. */
function rulesIn(ns: NetNamespace): string {
  return spawnSync(bins.nsenter!, [`--net=${ns.path}`, '--', bins.nft!, 'list', 'table', 'inet', 'sandbox'], { encoding: 'utf8' }).stdout;
}

describe('spare network namespaces', { skip }, () => {
  test('a released box leaves a spare for its port, the next box with that port gets it with the same rules, and close removes every spare', async () => {
    const pool = new NetworkPool({ ip: bins.ip!, nft: bins.nft!, nsenter: bins.nsenter! }, `spares${process.pid}`, new HostFirewall({ iptables: null, firewallCmd: null }));
    const made: NetNamespace[] = [];
    try {
      const first = await pool.create(3000);
      made.push(first);
      assert.match(rulesIn(first), new RegExp(`ip saddr ${first.hostAddr.replace(/\./g, '\\.')} tcp dport 3000 accept`));
      await pool.releaseBox(first);
      assert.equal(existsSync(first.path), false, 'the box\'s own namespace is gone');
      await waitFor(() => pool.sparePorts().includes(3000), 'a spare for port 3000', 20000);

      // Another port never gets the spare of 3000: its namespace is made for it.
      const other = await pool.create(4000);
      made.push(other);
      assert.deepEqual(pool.sparePorts(), [3000]);
      const rules = rulesIn(other);
      assert.match(rules, /tcp dport 4000 accept/);
      assert.doesNotMatch(rules, /dport 3000/);

      const second = await pool.create(3000);
      made.push(second);
      assert.deepEqual(pool.sparePorts(), [], 'the spare is handed out once');
      assert.notEqual(second.index, first.index);
      assert.match(rulesIn(second), new RegExp(`ip saddr ${second.hostAddr.replace(/\./g, '\\.')} tcp dport 3000 accept`));
      assert.match(rulesIn(second), /policy drop/);
      // No process ever ran in the spare: it holds only the box's own interfaces.
      const links = spawnSync(bins.ip!, ['-n', second.name, '-o', 'link'], { encoding: 'utf8' }).stdout.trim().split('\n').map((l) => l.split(':')[1]!.trim().split('@')[0]);
      assert.deepEqual(links.sort(), ['eth0', 'lo']);

      await pool.releaseBox(other);
      await pool.releaseBox(second);
      await waitFor(() => pool.sparePorts().length === 2, 'spares for 3000 and 4000', 20000);
      const spares = pool.sparePorts();
      assert.deepEqual([...spares].sort(), [3000, 4000]);

      // A box that asks while the spare for its port is still being made waits for that one.
      const third = await pool.create(4000);
      made.push(third);
      await pool.releaseBox(third);
      const fourth = await pool.create(4000);
      made.push(fourth);
      assert.deepEqual(pool.sparePorts(), [3000], 'the spare being made went to the box, none was left over');
      assert.match(rulesIn(fourth), /tcp dport 4000 accept/);
      await pool.releaseBox(fourth);
    } finally {
      pool.stopSpares();
      await pool.close();
    }
    const left = spawnSync(bins.ip!, ['netns', 'list'], { encoding: 'utf8' }).stdout;
    for (const ns of made) assert.doesNotMatch(left, new RegExp(`^${ns.name}\\b`, 'm'));
    // What close released, by the claims this pool made: none is left in /run/berth-net.
    const claims = readdirSync('/run/berth-net').filter((n) => /^\d+$/.test(n) && readFileSync(path.join('/run/berth-net', n), 'utf8').startsWith(`spares${process.pid} `));
    assert.deepEqual(claims, []);
  });
});
