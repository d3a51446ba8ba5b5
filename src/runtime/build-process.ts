import { BuildError } from './build-error.js';
import type { BoxProcess } from './driver.js';
import type { LogStream } from './logs.js';
import { redactedLines } from './app-output.js';
import { silentStepMs, watchSilence } from './silent-step.js';

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
  /** After how long without output a step gets a still-running line (default: silentStepMs()). */
  silentMs?: number;
}

/** How much of a failed step's output its error keeps (the end of it: where tools print why). */
const TAIL_CHARS = 16 * 1024;

/**
 * A step that ran and exited with a status other than 0: the message says so, `output` holds the
 * end of what it printed (redacted, as the log has it), so a caller can tell why (npm's EUSAGE).
 */
export class StepFailedError extends BuildError {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly output: string,
  ) {
    super(message);
  }
}

/**
 * Runs one process to its end: output redacted into the build log, cancel and the deadline kill it.
 * `step` is the step's name as the log shows it (`install: npm ci`): a step silent for the budget's
 * `silentMs` gets `[berth] still running: <step> (<n> s without output)`, repeated while it stays silent.
 * Answers the first 4 KiB of its output; a non-zero exit throws StepFailedError with the last 16 KiB.
 */
export async function runBuildProcess(budget: ProcessBudget, start: () => BoxProcess, label: string, killAll: () => void | Promise<void>, step: string = label): Promise<string> {
  if (budget.signal.aborted) throw new BuildError('the build was cancelled');
  const remaining = budget.deadline - Date.now();
  if (remaining <= 0) throw new BuildError(`the build timed out after ${Math.round(budget.timeoutMs / 1000)} s`);
  let child: BoxProcess;
  try {
    child = start();
  } catch (e) {
    throw new BuildError(`could not run ${label}: ${(e as Error).message}`);
  }
  const silence = watchSilence(step, (line) => budget.log('stdout', line), budget.silentMs ?? silentStepMs());
  let captured = '';
  let tail = '';
  redactedLines(child, budget.secrets, (name, line) => {
    silence.output();
    if (captured.length < 4096) captured += line + '\n';
    tail += line + '\n';
    if (tail.length > 2 * TAIL_CHARS) tail = tail.slice(tail.length - TAIL_CHARS);
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
    const output = tail.length > TAIL_CHARS ? tail.slice(tail.length - TAIL_CHARS) : tail;
    if (code === 127) throw new StepFailedError(`${label} failed: a program it runs was not found (exit code 127)`, code, output);
    if (code !== 0) throw new StepFailedError(`${label} failed (${signal ? `killed by ${signal}` : `exit code ${code}`})`, code, output);
    return captured;
  } finally {
    silence.stop();
    clearTimeout(timer);
    budget.signal.removeEventListener('abort', onAbort);
    // Anything the step left running (children, detached ones) goes with it.
    await killAll();
  }
}
