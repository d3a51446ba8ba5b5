/**
 * What detection answers for one app folder: the build plan (contract section 11) and the
 * section 5 scan fields derived from it. A provider (providers/<name>.ts) turns a folder's facts
 * into a `Detection`; `detect.ts` picks the provider, applies the folder's overrides (Procfile,
 * railpack.json, berth.json) and derives the scan fields.
 */
import type { Facts } from './facts.js';

export type Runtime =
  | 'node' | 'bun' | 'deno' | 'python' | 'go' | 'rust' | 'ruby' | 'php' | 'java' | 'elixir' | 'dotnet' | 'gleam' | 'cpp'
  | 'shell' | 'static' | 'docker' | 'unknown';

export interface StaticPlan {
  /** Folder of the built files, relative to the app folder (`.` for the folder itself). */
  outputDirectory: string;
  /** Answer `index.html` for paths with no file (single-page apps). */
  spa: boolean;
}

/** The build plan of contract section 11, as the scan answers it. */
export interface BuildPlan {
  runtime: Runtime;
  /** The toolchain version the project pins (`20`, `3.12`, `1.22`), when it pins one. */
  version?: string;
  install: string[];
  build: string[];
  /** The command the app runs with; absent for a static site. */
  start?: string;
  static?: StaticPlan;
  /** Variables the folder's `railpack.json` sets for the build and the app. */
  variables?: Record<string, string>;
  /** What detection ignored and why (an invalid `berth.json` field, naming the file and the field), for the build log. */
  notes?: string[];
}

/** A program the plan needs beyond the host's PATH, provided before the install step (toolchains.ts). */
export interface Tool {
  name: 'pnpm' | 'yarn' | 'bun' | 'deno';
  /** The pinned version (`9.12.0`, `1`), or undefined for the latest. */
  version?: string;
}

/** What a provider answers for one app folder. */
export interface Detection {
  runtime: Runtime;
  /** Lowercase framework id (`next`, `django`, `rails`, `spring-boot`, ...), or null. */
  framework: string | null;
  /** `npm`, `pnpm`, `yarn`, `bun`, `pip`, `uv`, `poetry`, `bundler`, `composer`, `maven`, `gradle`, `cargo`, `go`, `mix`, ... */
  packageManager: string | null;
  /** The pinned toolchain version and the file it came from (`.nvmrc`, `go.mod`, ...). */
  version?: { value: string; source: string };
  install: string[];
  build: string[];
  start: string | null;
  static?: StaticPlan | null;
  /** Where built output lands (informational for servers, served for static sites). */
  outputDirectory: string | null;
  /** The port the app listens on when it does not read $PORT (null for static sites). */
  port: number | null;
  /** Programs the build and the app need on the host (checked before anything runs). */
  programs: string[];
  /** Package managers or runtimes to provide first (corepack, the npm registry). */
  tools?: Tool[];
  variables?: Record<string, string>;
  /** What detection ignored and why (an invalid berth.json field), for the build log and the scan. */
  notes?: string[];
}

/** A provider: one runtime family, in a file of its own under providers/. */
export interface Provider {
  /** The provider's name (`node`, `python`, ...), also the fixture prefix of its tests. */
  name: string;
  /** Whether the folder is this provider's (the first provider that says yes plans it). */
  detect(f: Facts): boolean;
  plan(f: Facts): Detection;
}

/** An empty detection of a runtime, for providers to fill. */
export function detection(runtime: Runtime, fields: Partial<Detection> = {}): Detection {
  return { runtime, framework: null, packageManager: null, install: [], build: [], start: null, static: null, outputDirectory: null, port: null, programs: [], ...fields };
}

/** The plan a detection answers in the scan. */
export function planOf(d: Detection): BuildPlan {
  const plan: BuildPlan = { runtime: d.runtime, install: [...d.install], build: [...d.build] };
  if (d.version) plan.version = d.version.value;
  if (d.start) plan.start = d.start;
  if (d.static && !d.start) plan.static = { ...d.static };
  if (d.variables && Object.keys(d.variables).length) plan.variables = { ...d.variables };
  if (d.notes?.length) plan.notes = [...d.notes];
  return plan;
}
