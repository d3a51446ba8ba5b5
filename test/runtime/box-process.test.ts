import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnBoxProcess } from '../../src/runtime/box-process.js';

// Reads its fd 3 to the end and prints it (a pipe of Node's is a socket: /dev/fd/3 cannot be opened).
const READ_FD3 = [process.execPath, '-e', "process.stdout.write(require('node:fs').readFileSync(3))"];

async function outputOf(stream: NodeJS.ReadableStream | null): Promise<string> {
  let s = '';
  for await (const chunk of stream ?? []) s += String(chunk);
  return s;
}

test('a process gets the bytes of its extra fds only after beforeInput has run with its pid', async () => {
  const seen: number[] = [];
  const p = spawnBoxProcess(READ_FD3, '/', { PATH: '/usr/bin:/bin' }, [Buffer.from('the arguments')], (pid) => seen.push(pid));
  assert.deepEqual(seen, [p.pid]);
  const [out, r] = await Promise.all([outputOf(p.stdout), p.exited]);
  assert.equal(out, 'the arguments');
  assert.deepEqual(r, { code: 0, signal: null });
});

test('a process whose beforeInput throws is killed unfed, and its exit carries the error', async () => {
  const p = spawnBoxProcess(READ_FD3, '/', { PATH: '/usr/bin:/bin' }, [Buffer.from('never read')], () => {
    throw new Error('no cgroup for it');
  });
  assert.ok(p.pid);
  const [out, r] = await Promise.all([outputOf(p.stdout), p.exited]);
  assert.equal(out, '');
  assert.equal(r.signal, 'SIGKILL');
  assert.equal(r.error?.message, 'no cgroup for it');
});
