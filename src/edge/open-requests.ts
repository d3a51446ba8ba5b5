/** Open proxied requests and WebSocket connections per project (an app with any is not idle). */
export class OpenRequests {
  private readonly counts = new Map<string, number>();

  /** `onChange(app, true)` when an app's count leaves 0, `(app, false)` when it is back to 0 (the threaded edge's mirror). */
  constructor(private readonly onChange?: (projectId: string, open: boolean) => void) {}

  /** How many requests and WebSocket connections of the project are open right now. */
  of(projectId: string): number {
    return this.counts.get(projectId) ?? 0;
  }

  /** Counts one more open for the project; the returned release counts it down once (later calls do nothing). */
  open(projectId: string): () => void {
    const was = this.counts.get(projectId) ?? 0;
    this.counts.set(projectId, was + 1);
    if (was === 0) this.onChange?.(projectId, true);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.counts.get(projectId) ?? 1) - 1;
      if (n <= 0) {
        this.counts.delete(projectId);
        this.onChange?.(projectId, false);
      } else this.counts.set(projectId, n);
    };
  }
}
