/**
 * Build detection for one app folder: the first provider of providers/index.ts that claims the
 * folder plans it, then the folder's own overrides apply (a Procfile's `web:` line, railpack.json,
 * then berth.json).
 * The answer carries the build plan and the scan fields of contract section 5 derived from it.
 */
import type { Facts } from './facts.js';
import { detection, planOf, type BuildPlan, type Detection, type Runtime } from './plan.js';
import { PROVIDERS, applyBerthConfig, applyProcfile, applyRailpackConfig } from './providers/index.js';

export type { Runtime } from './plan.js';

export interface DetectedApp {
  /** Folder of the app, relative to the scanned root ('' is the root itself); commands run there. */
  rootDirectory: string;
  name: string | null;
  runtime: Runtime;
  framework: string | null;
  packageManager: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  outputDirectory: string | null;
  port: number | null;
  plan: BuildPlan;
}

/** The provider's detection of a folder, with the folder's overrides applied ('unknown' when no provider claims it). */
export function detectFolder(f: Facts): Detection {
  const provider = PROVIDERS.find((p) => p.detect(f));
  const d = provider ? provider.plan(f) : detection('unknown');
  return applyBerthConfig(f, applyRailpackConfig(f, applyProcfile(f, d)));
}

const joined = (steps: string[]): string | null => (steps.length ? steps.join(' && ') : null);

/** Detects one app folder. */
export function detectApp(f: Facts): DetectedApp {
  const d = detectFolder(f);
  return {
    rootDirectory: f.rel,
    name: typeof f.pkg?.name === 'string' ? f.pkg.name.slice(0, 214) : null,
    runtime: d.runtime,
    framework: d.framework,
    packageManager: d.packageManager,
    installCommand: joined(d.install),
    buildCommand: joined(d.build),
    startCommand: d.start,
    outputDirectory: d.static?.outputDirectory ?? d.outputDirectory,
    port: d.start || d.runtime === 'docker' ? d.port : null,
    plan: planOf(d),
  };
}
