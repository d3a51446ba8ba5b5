/**
 * Open connections per client address, for the per-address caps of the API and the edge: a socket
 * counts from `add` until it closes.
 */
export class AddressCounter {
  private readonly open = new Map<string, number>();

  /** Open connections of `address` now. */
  of(address: string): number {
    return this.open.get(address) ?? 0;
  }

  /** Counts `socket` under `address` until it closes; answers the count with it. */
  add(address: string, socket: { once(event: 'close', listener: () => void): unknown }): number {
    const n = this.of(address) + 1;
    this.open.set(address, n);
    socket.once('close', () => {
      const left = this.of(address) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    });
    return n;
  }
}
