/**
 * Waits for `p` to settle, or `ms` at most; the timer is cleared once `p` settles, so a wait that
 * ended early does not keep the process (a server's close, a test file's end) alive for the rest.
 * Answers whether `p` settled in time. Never rejects.
 */
export async function settleWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
