import { BuildError } from './build-error.js';
import type { BoxProcess } from './driver.js';
import type { LogStream } from './logs.js';
import { redactedLines } from './app-output.js';

/** What bounds every process of one build, and where its output goes. */
export interface ProcessBudget {
  signal: AbortSignal;
  /** When the whole build must be done (ms since the epoch). */
  deadline: number;
  /** The build's whole time budget (for the message when it runs out). */
  timeoutMs: number;
  /** Secret values redacted from every output line. */
  secrets: string[];
  log(stream: LogStream, line: string): void;
}

/** Runs one process to its end: output redacted into the build log, cancel and the deadline kill it. */
export async function runBuildProcess(budget: ProcessBudget, start: () => BoxProcess, label: string, killAll: () => void | Promise<void>): Promise<string> {
  if (budget.signal.aborted) throw new BuildError('the build was cancelled');
  const remaining = budget.deadline - Date.now();
  if (remaining <= 0) throw new BuildError(`the build timed out after ${Math.round(budget.timeoutMs / 1000)} s`);
  let child: BoxProcess;
  try {
    child = start();
  } catch (e) {
    throw new BuildError(`could not run ${label}: ${(e as Error).message}`);
  }
  let captured = '';
  redactedLines(child, budget.secrets, (name, line) => {
    if (captured.length < 4096) captured += line + '\n';
    budget.log(name, line);
  });
  let why: string | null = null;
  const onAbort = () => {
    why = 'the build was cancelled';
    killAll();
  };
  budget.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    why = `the build timed out after ${Math.round(budget.timeoutMs / 1000)} s`;
    killAll();
  }, remaining);
  try {
    const { code, signal, error } = await child.exited;
    if (why) throw new BuildError(why);
    if (error) throw new BuildError(`could not run ${label}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? `program "${label}" not found` : error.message}`);
    if (code === 127) throw new BuildError(`${label} failed: a program it runs was not found (exit code 127)`);
    if (code !== 0) throw new BuildError(`${label} failed (${signal ? `killed by ${signal}` : `exit code ${code}`})`);
    return captured;
  } finally {
    clearTimeout(timer);
    budget.signal.removeEventListener('abort', onAbort);
    // Anything the step left running (children, detached ones) goes with it.
    await killAll();
  }
}
