/**
 * Progress on silent steps (contract section 18): a build step or an app start that prints nothing
 * for a while gets a build-log line `[berth] still running: <step> (<n> s without output)`, repeated
 * at the same interval while it stays silent (n: seconds since its last output, or since it began).
 */

/** The interval, in seconds: 30, or BERTH_SILENT_STEP_SECONDS (for tests: a suite sees the line without waiting 30 s). */
export function silentStepMs(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.BERTH_SILENT_STEP_SECONDS);
  return (Number.isFinite(n) && n > 0 ? n : 30) * 1000;
}

/** The line a silent step gets in the build log. */
export function stillRunningLine(step: string, silentMs: number): string {
  return `[berth] still running: ${step} (${Math.max(1, Math.round(silentMs / 1000))} s without output)`;
}

export interface SilenceWatch {
  /** The step printed something: the silence starts again from now. */
  output(): void;
  /** The step ended: no more lines. */
  stop(): void;
}

/**
 * Watches one step: `note` gets the still-running line whenever the step has been silent for
 * `intervalMs` since its last output or the previous line. One timer per step, rescheduled only when
 * it fires (output just moves a timestamp), so a chatty step costs nothing.
 */
export function watchSilence(step: string, note: (line: string) => void, intervalMs = silentStepMs()): SilenceWatch {
  let lastOutput = Date.now();
  let lastNote = lastOutput;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const schedule = (at: number) => {
    if (stopped) return;
    timer = setTimeout(fire, Math.max(0, at - Date.now()));
    timer.unref?.();
  };
  const fire = () => {
    timer = null;
    const now = Date.now();
    const since = Math.max(lastOutput, lastNote);
    if (now - since >= intervalMs) {
      note(stillRunningLine(step, now - lastOutput));
      lastNote = now;
      schedule(now + intervalMs);
    } else schedule(since + intervalMs);
  };
  schedule(lastOutput + intervalMs);
  return {
    output() {
      lastOutput = Date.now();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
