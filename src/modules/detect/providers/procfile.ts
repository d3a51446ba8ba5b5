/**
 * A folder's `Procfile`: its `web:` command becomes the start command, whatever the provider planned,
 * as Railpack's procfile step does; with no `web:` line a `worker:` line, else the first process of
 * the file. Lines are `name: command` (name of letters, digits, `_` and `-`); blank lines and `#`
 * comments are skipped. The command is answered as written: one that needs a shell (pipes, `;`,
 * `$( )`) is refused with a clear message when the build parses it. A Dockerfile's plan is left
 * alone (the image says how it runs).
 */
import type { Facts } from '../facts.js';
import type { Detection } from '../plan.js';

export interface ProcfileEntry {
  type: string;
  command: string;
}

export function parseProcfile(text: string): ProcfileEntry[] {
  const out: ProcfileEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z0-9_-]+):\s*(.*)$/.exec(line);
    if (m) out.push({ type: m[1]!, command: m[2]!.trim() });
  }
  return out;
}

/** The command a Procfile starts the app with (web, else worker, else the first with a command). */
export function procfileStart(text: string): string | null {
  const entries = parseProcfile(text);
  const last = (type: string) => entries.filter((e) => e.type === type && e.command).at(-1)?.command ?? null;
  return last('web') ?? last('worker') ?? entries.find((e) => e.command)?.command ?? null;
}

export function applyProcfile(f: Facts, d: Detection): Detection {
  if (d.runtime === 'docker') return d;
  const text = f.read('Procfile');
  const start = text === null ? null : procfileStart(text);
  return start ? { ...d, start } : d;
}
