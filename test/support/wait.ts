/**
 * The one polling helper of the suites: calls `check` every `stepMs` until it answers a truthy
 * value (which it answers) or `timeoutMs` passes. A throw counts as "not yet". On timeout the error
 * says what was awaited, for how long, and the last throw (so an assertion's own message survives).
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs = 15000,
  stepMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as T;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= end) break;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`, { cause: last });
}

/** The statuses after which a deployment no longer changes. */
export const DEPLOYMENT_DONE = ['ready', 'failed', 'cancelled', 'superseded'];

/** Polls `GET /api/deployments/:id` until the deployment is done; answers its record. */
export async function waitForDeployment(api: { get(path: string): Promise<{ body: any }> }, id: string, timeoutMs = 60000): Promise<any> {
  return waitFor(
    async () => {
      const r = await api.get(`/api/deployments/${id}`);
      return DEPLOYMENT_DONE.includes(r.body.data?.status) ? r.body.data : null;
    },
    `deployment ${id} to finish`,
    timeoutMs,
    100,
  );
}
