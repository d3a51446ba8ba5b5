import type Docker from 'dockerode';
import { labelFilter, networkName, statusOf } from './containers.js';

/** How long removing a network or an image waits for the engine to let go of it (task containers going). */
const LET_GO_MS = 20_000;
const POLL_MS = 500;

/**
 * What a deleted project leaves on the Swarm manager's engine once its services are gone (SwarmApps'
 * forgetProject removes those first): the containers of its builds (they run as plain containers on
 * the manager) and any task container left, its bridge network (`berth-<key>-<projectId>`, the
 * builds'), any network still labelled with it, and its release images with every local tag they
 * carry (the registry's name of a release whose push failed among them). The container driver's
 * forgetProject removes the same.
 */
export async function removeProjectLeftovers(api: Docker, key: string, projectId: string): Promise<void> {
  const filters = labelFilter({ 'berth.instance': key, 'berth.project': projectId });
  // Every container of the project: its builds', and tasks the engine left (20.10 keeps the exited
  // container of a job's task whose service is gone; its services are all removed by now).
  for (const c of await api.listContainers({ all: true, filters })) {
    await api
      .getContainer(c.Id)
      .remove({ force: true })
      .catch((e) => {
        if (statusOf(e) !== 404) throw e;
      });
  }
  const networks = new Set([networkName(key, projectId), ...(await api.listNetworks({ filters })).map((n) => n.Name)]);
  for (const name of networks) await letGo(`the network ${name}`, () => api.getNetwork(name).remove());
  // By id and forced: every tag of the image goes (`berth/<slug>:<deployment>` and `<registry>/berth/...`).
  for (const img of await api.listImages({ filters })) await letGo(`the image ${img.RepoTags?.[0] ?? img.Id}`, () => api.getImage(img.Id).remove({ force: true }));
}

/**
 * Runs a removal until it succeeds or the thing is gone (404); any other error (a network with active
 * endpoints, an image a container still uses: the engine removes the tasks' containers a little after
 * their service) is tried again until LET_GO_MS.
 */
async function letGo(what: string, remove: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + LET_GO_MS;
  for (;;) {
    try {
      await remove();
      return;
    } catch (e) {
      if (statusOf(e) === 404) return;
      if (Date.now() > deadline) throw new Error(`could not remove ${what}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}
