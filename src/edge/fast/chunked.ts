import { hexValue } from '../normalize.js';

/**
 * The chunked body of an app's answer (RFC 9112 section 7.1), read as it arrives: the data of each chunk
 * is handed on, the framing (sizes, extensions, trailers) is not. The edge writes its own chunked framing
 * to the client, so what the client reads is always framing the edge made.
 */
export class ChunkedReader {
  private state: 'size' | 'ext' | 'size-lf' | 'data' | 'data-cr' | 'data-lf' | 'trailer' | 'done' = 'size';
  private size = 0;
  private digits = 0;
  /** Length of the trailer line being read, its CR not counted (0 at its start: an empty line ends the body). */
  private trailerLine = 0;
  private trailerBytes = 0;
  /** A trailer line's CR was read, its LF not yet. */
  private cr = false;

  /** True once the last chunk and the trailers are read. */
  get done(): boolean {
    return this.state === 'done';
  }

  /**
   * Reads `buf`: each piece of chunk data goes to `onData`. Answers the bytes of `buf` used (fewer than
   * its length only when the body ended inside it), or an Error for malformed framing.
   */
  // Long on purpose: one state machine over the bytes, each state's rule beside it.
  read(buf: Buffer, onData: (data: Buffer) => void): number | Error {
    let i = 0;
    while (i < buf.length && this.state !== 'done') {
      const c = buf[i]!;
      switch (this.state) {
        case 'size': {
          const v = hexValue(c);
          if (v >= 0) {
            if (++this.digits > 12) return new Error('chunk size too large');
            this.size = this.size * 16 + v;
            i++;
          } else if (this.digits === 0) return new Error('malformed chunk size');
          else if (c === 0x3b /* ; */ || c === 0x20 || c === 0x09) {
            this.state = 'ext';
            i++;
          } else if (c === 0x0d) {
            this.state = 'size-lf';
            i++;
          } else return new Error('malformed chunk size');
          break;
        }
        case 'ext':
          // Extensions are skipped; a bare LF or a control character in them is refused.
          if (c === 0x0d) this.state = 'size-lf';
          else if (c === 0x0a || (c < 0x20 && c !== 0x09) || c === 0x7f) return new Error('malformed chunk extension');
          i++;
          break;
        case 'size-lf':
          if (c !== 0x0a) return new Error('malformed chunk size line');
          i++;
          this.state = this.size === 0 ? 'trailer' : 'data';
          break;
        case 'data': {
          const n = Math.min(this.size, buf.length - i);
          onData(buf.subarray(i, i + n));
          this.size -= n;
          i += n;
          if (this.size === 0) this.state = 'data-cr';
          break;
        }
        case 'data-cr':
          if (c !== 0x0d) return new Error('chunk data longer than its size');
          this.state = 'data-lf';
          i++;
          break;
        case 'data-lf':
          if (c !== 0x0a) return new Error('chunk data longer than its size');
          this.state = 'size';
          this.digits = 0;
          i++;
          break;
        case 'trailer':
          // Trailer lines are read and dropped, up to 16 KiB of them; an empty line (CRLF) ends the body.
          if (++this.trailerBytes > 16 * 1024) return new Error('trailers too large');
          if (c === 0x0d) {
            if (this.cr) return new Error('malformed trailer');
            this.cr = true;
          } else if (c === 0x0a) {
            if (!this.cr) return new Error('malformed trailer');
            if (this.trailerLine === 0) this.state = 'done';
            this.trailerLine = 0;
            this.cr = false;
          } else {
            if (this.cr) return new Error('malformed trailer');
            this.trailerLine++;
          }
          i++;
          break;
      }
    }
    return i;
  }
}
