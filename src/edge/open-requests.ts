/** Open proxied requests and WebSocket connections per project (an app with any is not idle). */
export class OpenRequests {
  private readonly counts = new Map<string, number>();

  /** How many requests and WebSocket connections of the project are open right now. */
  of(projectId: string): number {
    return this.counts.get(projectId) ?? 0;
  }

  /** Counts one more open for the project; the returned release counts it down once (later calls do nothing). */
  open(projectId: string): () => void {
    this.counts.set(projectId, (this.counts.get(projectId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.counts.get(projectId) ?? 1) - 1;
      if (n <= 0) this.counts.delete(projectId);
      else this.counts.set(projectId, n);
    };
  }
}
