import { spawn } from 'node:child_process';

/**
 * Which boxes reach which managed services (contract section 19): a project's app and build boxes
 * reach its own services' port, nothing else does. Boxes cannot reach each other (the host's
 * `forward` chain drops `bth*` to `bth*`, netns.ts), except for the `(client, service, port)` triples in
 * the set `svc_pairs` of the `inet berth` table, which a rule before that drop accepts. This keeps the
 * set: a client box (app, build) of a project is paired with every service box of the same project on
 * this server and the other way round, and a box's triples go with its namespace.
 *
 * The set is the one part of the host table that changes while the server runs; a rewrite of the table
 * (another server starting) keeps its elements (netns.ts), and `reapply` puts this server's back where
 * the table was removed and made again.
 */

export const PAIRS_SET = 'svc_pairs';

interface ProjectBoxes {
  clients: Set<string>;
  /** Service address -> its port. */
  services: Map<string, number>;
}

type Triple = `${string} . ${string} . ${number}`;

function nft(bin: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let out = '';
    let err = '';
    child.stdout!.on('data', (c: Buffer) => {
      if (out.length < 4_000_000) out += c.toString();
    });
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 2000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`nft ${args.slice(0, 3).join(' ')} failed: ${err.trim() || `exit ${code}`}`))));
    if (input !== undefined) child.stdin!.end(input);
  });
}

export class ServiceLinks {
  private readonly projects = new Map<string, ProjectBoxes>();
  /** Address -> its project, for the boxes this server registered. */
  private readonly owners = new Map<string, string>();
  /** The triples this server added (and has not deleted). */
  private readonly added = new Set<Triple>();

  /** Every change runs after the one before (a detach never misses what an attach is still adding). */
  private queue: Promise<unknown> = Promise.resolve();

  /** `repair` writes the host table again (netns.ts): the set or its rules were missing. */
  constructor(
    private readonly nftBin: string,
    private readonly repair: () => Promise<void>,
  ) {}

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => {});
    return next;
  }

  /**
   * A box of `projectId` at `addr`: a service listening on `servicePort`, or (null) a client, an app or
   * a build. Resolves once its triples are in the set (before any process of the box starts).
   */
  attach(projectId: string, addr: string, servicePort: number | null): Promise<void> {
    return this.serial(() => this.attachNow(projectId, addr, servicePort));
  }

  private async attachNow(projectId: string, addr: string, servicePort: number | null): Promise<void> {
    let p = this.projects.get(projectId);
    if (!p) this.projects.set(projectId, (p = { clients: new Set(), services: new Map() }));
    this.owners.set(addr, projectId);
    const triples: Triple[] = [];
    if (servicePort === null) {
      p.clients.add(addr);
      for (const [svc, port] of p.services) triples.push(`${addr} . ${svc} . ${port}`);
    } else {
      p.services.set(addr, servicePort);
      for (const c of p.clients) triples.push(`${c} . ${addr} . ${servicePort}`);
    }
    if (triples.length === 0) return;
    const add = (items: string[]) => nft(this.nftBin, ['-f', '-'], `add element inet berth ${PAIRS_SET} { ${items.join(', ')} }\n`);
    await add(triples).catch(async () => {
      // No set: the table was removed, or written by an older server. This version's goes back, with every pair of this server.
      await this.repair();
      await add([...this.added, ...triples]);
    });
    for (const t of triples) this.added.add(t);
  }

  /** The box at `addr` is gone: its triples go (before its address can be claimed again). */
  detach(addr: string): Promise<void> {
    return this.serial(() => this.detachNow(addr));
  }

  private async detachNow(addr: string): Promise<void> {
    const projectId = this.owners.get(addr);
    if (projectId === undefined) return;
    this.owners.delete(addr);
    const p = this.projects.get(projectId)!;
    p.clients.delete(addr);
    p.services.delete(addr);
    if (p.clients.size === 0 && p.services.size === 0) this.projects.delete(projectId);
    const mine = [...this.added].filter((t) => t.split(' . ').slice(0, 2).includes(addr));
    for (const t of mine) this.added.delete(t);
    if (mine.length) await this.remove(mine);
  }

  /** Deletes triples one command each (one already gone, after a table rewrite, does not stop the others). */
  private async remove(triples: string[]): Promise<void> {
    await nft(this.nftBin, ['-f', '-'], triples.map((t) => `delete element inet berth ${PAIRS_SET} { ${t} }\n`).join('')).catch(async () => {
      for (const t of triples) await nft(this.nftBin, ['delete', 'element', 'inet', 'berth', PAIRS_SET, `{ ${t} }`]).catch(() => {});
    });
  }

  /**
   * Removes every triple naming one of `addrs` (namespaces a crashed server left, reclaimed now): a /30
   * claimed again must not inherit a pairing of its previous box.
   */
  purge(addrs: Set<string>): Promise<void> {
    return addrs.size === 0 ? Promise.resolve() : this.serial(() => this.purgeNow(addrs));
  }

  private async purgeNow(addrs: Set<string>): Promise<void> {
    let listed: { nftables?: { set?: { elem?: { concat?: [string, string, number] }[] } }[] };
    try {
      listed = JSON.parse(await nft(this.nftBin, ['-j', 'list', 'set', 'inet', 'berth', PAIRS_SET]));
    } catch {
      return; // no set yet: nothing to purge
    }
    const stale: string[] = [];
    for (const entry of listed.nftables ?? []) {
      for (const e of entry.set?.elem ?? []) {
        const c = e.concat;
        if (c && (addrs.has(c[0]) || addrs.has(c[1]))) stale.push(`${c[0]} . ${c[1]} . ${c[2]}`);
      }
    }
    if (stale.length) await this.remove(stale);
  }

  /** After the host table was made anew (it had been removed): this server's triples go back in. */
  reapply(): Promise<void> {
    return this.serial(async () => {
      if (this.added.size) await nft(this.nftBin, ['-f', '-'], `add element inet berth ${PAIRS_SET} { ${[...this.added].join(', ')} }\n`);
    });
  }
}
