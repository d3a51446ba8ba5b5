/** What the managed-services suites share: clients run where a service is reachable, and waiting for one to run. */
import { execFile } from 'node:child_process';
import { argvAt } from '../../src/runtime/netns-join.js';
import type { TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

export interface Ran {
  code: number;
  out: string;
}

/** A program's exit code and output (stdout then stderr), with nothing of the test's environment but `env`; killed after `timeoutMs`. */
export function exec(bin: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(bin, args, { env: { PATH: '/usr/bin:/bin', ...env }, timeout: timeoutMs }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }));
  });
}

/** A client run inside the network namespace of the service at `addr`, as the server's own dumps run (the host itself is refused). */
export function execIn(addr: string, bin: string, args: string[], env: Record<string, string> = {}, timeoutMs?: number): Promise<Ran> {
  const at = argvAt(addr, bin, args);
  return exec(at.bin, at.args, env, timeoutMs);
}

/** Waits until the service is `running` with an address; a `failed` one throws with its log. */
export function serviceRunning(server: TestServer, token: string, projectId: string, id: string, timeoutMs: number): Promise<any> {
  const logs = () => server.ctx.state.services.runner!.logs(id).join('\n');
  return waitFor(
    async () => {
      const r = (await server.api(token).get(`/api/projects/${projectId}/services/${id}`)).body.data;
      if (r.status === 'failed') throw new Error(`failed: ${r.error}\n${logs()}`);
      return r.status === 'running' && r.internalHost ? r : null;
    },
    `service ${id} running`,
    timeoutMs,
    200,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}\n${logs()}`);
  });
}
