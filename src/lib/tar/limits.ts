/** Caps on what one extraction of an untrusted tarball may produce. */
export interface ExtractLimits {
  maxEntries: number;
  maxBytes: number;
  maxDepth: number;
  /** Cap on the decompressed tar stream (headers included): stops gzip bombs of zeros or headers. */
  maxDecompressedBytes: number;
}

export const DEFAULT_LIMITS: ExtractLimits = {
  maxEntries: 100_000,
  maxBytes: 1024 ** 3,
  maxDepth: 64,
  maxDecompressedBytes: 1024 ** 3 + 256 * 1024 ** 2,
};
