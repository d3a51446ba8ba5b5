import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Instance } from '../../src/runtime/app-instance.js';
import { StartError } from '../../src/runtime/release-spec.js';
import { IMAGES, containerSpecOf, get, useSwarm } from '../support/swarm.js';

// Swarm mode of the docker runtime (contract section 13): a deploy over a running release is a
// start-first rolling update, rolled back when the new tasks fail or never answer; on a real
// single-node swarm (test/support/swarm.ts). Each case deploys a project of its own and its release.
const swarm = await useSwarm('test/runtime/docker-swarm-updates');
const { withSwarm } = swarm;

/** A project of the case's own with version 2 (dpl_two, the image's own CMD) running on 2 replicas. */
async function runningTwo() {
  const projectId = swarm.project();
  const inst = await swarm.start(swarm.spec(projectId, IMAGES.two, 'dpl_two', { imageCommand: true }));
  return { projectId, inst };
}

test('a deploy rolls the service start-first to the new image while every request keeps answering', withSwarm, async () => {
  const projectId = swarm.project();
  const inst1 = await swarm.start(swarm.spec(projectId, IMAGES.one, 'dpl_one'));
  let rolling = true;
  const seen = new Map<string, number>();
  const failures: string[] = [];
  const loop = (async () => {
    while (rolling) {
      try {
        const v = (await get(inst1.upstream)).split(' ')[0]!;
        seen.set(v, (seen.get(v) ?? 0) + 1);
      } catch (e) {
        failures.push((e as Error).message);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const t0 = Date.now();
  let inst2: Instance;
  try {
    inst2 = await swarm.start(swarm.spec(projectId, IMAGES.two, 'dpl_two', { imageCommand: true }));
  } finally {
    // A few more requests on the old address after the roll: it now reaches the new tasks.
    await new Promise((r) => setTimeout(r, 300));
    rolling = false;
    await loop;
  }
  console.log(`# swarm: the rolling update of 2 replicas took ${Date.now() - t0} ms; ${[...seen].map(([v, n]) => `${n} answers of ${v}`).join(', ')}`);
  assert.deepEqual(failures, [], 'no request failed during the roll');
  assert.ok(seen.get('1')! > 0 && seen.get('2')! > 0, 'answers of both versions during the roll');

  const svc = (await swarm.service(projectId))!;
  assert.equal(svc.UpdateStatus?.State, 'completed');
  const cs = containerSpecOf(svc);
  assert.equal(cs.Image, IMAGES.two);
  assert.equal(cs.Command, undefined, "the image's own CMD runs");
  assert.equal(svc.Spec.Labels?.['berth.deployment'], 'dpl_two');
  const hosts = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const [version, host] = (await get(inst2.upstream)).split(' ');
    assert.equal(version, '2');
    hosts.add(host!);
  }
  assert.equal(hosts.size, 2);

  // The old instance's dispose leaves the service alone: it runs the newer release now.
  await inst1.box.dispose();
  assert.equal(containerSpecOf((await swarm.service(projectId))!).Image, IMAGES.two);
  assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
  inst2.detach!();
  await swarm.apps.forgetProject(projectId);
});

test('an update whose tasks exit at once is rolled back by the engine: start rejects with a StartError and the running release keeps answering', withSwarm, async () => {
  const { projectId, inst: inst2 } = await runningTwo();
  const before = (await swarm.service(projectId))!;
  const t0 = Date.now();
  await assert.rejects(swarm.start(swarm.spec(projectId, IMAGES.broken, 'dpl_broken', { imageCommand: true })), (e: Error) => {
    assert.ok(e instanceof StartError, e.message);
    assert.match(e.message, /^the update to dpl_broken was rolled back: .*non-zero exit \(3\)/);
    return true;
  });
  console.log(`# swarm: the failed update was rolled back in ${Date.now() - t0} ms`);
  const svc = (await swarm.service(projectId))!;
  assert.equal(containerSpecOf(svc).Image, IMAGES.two);
  assert.equal(svc.ID, before.ID);
  for (let i = 0; i < 6; i++) assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
  const lines = swarm.logs.runtime(projectId).read().map((l) => l.line);
  assert.ok(lines.some((l) => l.includes('[berth] the update to dpl_broken was rolled back')), lines.join('\n'));
  assert.ok(
    lines.some((l) => l.includes('broken on purpose')),
    "the failing tasks' output is in the app's log",
  );
  assert.ok(!lines.some((l) => l.includes('swarm-secret-value')));
  inst2.detach!();
  await swarm.apps.forgetProject(projectId);
});

test('an update whose tasks run but never answer is rolled back by Berth after the health check', withSwarm, async () => {
  const { projectId, inst: inst2 } = await runningTwo();
  const t0 = Date.now();
  await assert.rejects(swarm.start(swarm.spec(projectId, IMAGES.deaf, 'dpl_deaf', { imageCommand: true }), { deps: { healthTimeoutMs: 3000 } }), (e: Error) => {
    assert.ok(e instanceof StartError, e.message);
    assert.match(e.message, /^the app did not become healthy: it did not answer on port \d+ within 3 s/);
    return true;
  });
  console.log(`# swarm: the unhealthy update was rolled back in ${Date.now() - t0} ms`);
  const svc = (await swarm.service(projectId))!;
  assert.equal(containerSpecOf(svc).Image, IMAGES.two);
  assert.equal(svc.Spec.Labels?.['berth.deployment'], 'dpl_two');
  for (let i = 0; i < 4; i++) assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
  inst2.detach!();
  await swarm.apps.forgetProject(projectId);
});
