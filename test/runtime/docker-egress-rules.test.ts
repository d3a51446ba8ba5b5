import { test } from 'node:test';
import assert from 'node:assert/strict';
import { egressRules, nameserversOf } from '../../src/runtime/docker/egress-rules.js';

test('the docker egress table drops link-local, private and loopback destinations from project bridges and the default bridge, after what BERTH_OUTBOUND_ALLOW lists', () => {
  const rules = egressRules({ defaultBridge: 'docker0', allow: ['10.20.0.0/16', 'fd12::/64'], nameservers: ['10.255.255.53'] });
  for (const iface of ['"bbr*"', '"docker0"']) {
    const lines = rules.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(`iifname ${iface}`));
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const drop4 = at(/ip daddr \{ 0\.0\.0\.0\/8, 10\.0\.0\.0\/8, 100\.64\.0\.0\/10, 127\.0\.0\.0\/8, 169\.254\.0\.0\/16, 172\.16\.0\.0\/12, 192\.168\.0\.0\/16, .*\} drop$/);
    const drop6 = at(/ip6 daddr \{ .*fc00::\/7, fe80::\/10.*\} drop$/);
    assert.ok(drop4 > 0 && drop6 > 0, `${iface} drops:\n${lines.join('\n')}`);
    assert.ok(at(/ip daddr \{ 10\.20\.0\.0\/16 \} accept$/) < drop4, 'allowed IPv4 ranges pass first');
    assert.ok(at(/ip6 daddr \{ fd12::\/64 \} accept$/) < drop6, 'allowed IPv6 ranges pass first');
    assert.ok(at(/ip daddr \{ 10\.255\.255\.53 \} meta l4proto \{ tcp, udp \} th dport 53 accept$/) < drop4, 'DNS to the host\'s nameservers passes');
    assert.ok(at(/^iifname \S+ drop$/) >= 0, 'new connections to the host itself are dropped (input)');
  }
  assert.throws(() => egressRules({ defaultBridge: 'docker0"; flush ruleset', allow: [], nameservers: [] }), /not an interface name/);
});

test('nameserversOf() keeps the non-loopback nameservers of a resolv.conf', () => {
  assert.deepEqual(nameserversOf('# x\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver ::1\nsearch lan\n'), ['10.0.0.2', 'fe80::1']);
});
