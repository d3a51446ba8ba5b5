import type { BoxProcess } from './driver.js';
import type { LogFile, LogStream } from './logs.js';
import { LineSplitter, Redactor } from './redact.js';

/** Calls `onLine` with each line a child writes to stdout and stderr, secrets redacted (apps and build steps). */
export function redactedLines(child: Pick<BoxProcess, 'stdout' | 'stderr'>, secrets: string[], onLine: (stream: LogStream, line: string) => void): void {
  const attach = (stream: NodeJS.ReadableStream | null, name: LogStream) => {
    if (!stream) return;
    const r = new Redactor(secrets);
    const lines = new LineSplitter((line) => onLine(name, line));
    stream.on('data', (c: Buffer) => lines.push(r.push(c)));
    stream.on('end', () => {
      lines.push(r.end());
      lines.end();
    });
    stream.on('error', () => {});
  };
  attach(child.stdout, 'stdout');
  attach(child.stderr, 'stderr');
}

/** Copies a running app's stdout and stderr into its runtime log, line by line, secrets redacted. */
export function pipeAppOutput(child: BoxProcess, logFile: LogFile, secrets: string[]): void {
  redactedLines(child, secrets, (stream, line) => logFile.append({ ts: new Date().toISOString(), stream, line }));
}
