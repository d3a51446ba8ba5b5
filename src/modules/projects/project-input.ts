/**
 * The flat project config fields as callers send them (create, update, ensure, options): validated,
 * normalised and merged over the stored columns; the source type is derived from the result.
 */
import { invalid } from '../../lib/errors.js';
import type { ProjectRow } from './projects.store.js';
import { checkBranch, checkGitOwner, checkGitRepo, checkRelativeDir } from './validate.js';

export const DEFAULT_PORT = 3000;

export const DEFAULT_RESOURCES = {
  production: { cpuCores: 1, memoryMb: 512, diskMb: 1024, replicas: 1 },
  build: { cpuCores: 2, memoryMb: 2048, diskMb: 4096 },
};

/** The flat create body (seed fields plus contract section 5's additions); every field but name optional. */
export interface ProjectInput {
  name?: string;
  gitOwner?: string | null;
  gitRepo?: string | null;
  gitBranch?: string | null;
  framework?: string | null;
  buildCommand?: string | null;
  gitProvider?: string | null;
  installCommand?: string | null;
  startCommand?: string | null;
  outputDirectory?: string | null;
  rootDirectory?: string | null;
  port?: number;
  packageManager?: string | null;
  runtime?: string | null;
  /** config.dockerfile (contract section 13): the Dockerfile to build, relative to the root directory. */
  dockerfile?: string | null;
  /** config.httpsRedirect (contract section 14); null: the default (on once the host has a certificate). */
  httpsRedirect?: boolean | null;
  /** config.hsts (contract section 14); null: off. */
  hsts?: boolean | null;
  /** config.healthPath (contract section 20): `/...`; null or empty: a TCP connect. */
  healthPath?: string | null;
  /** config.autoRollback (contract section 20); null: off. */
  autoRollback?: boolean | null;
  /** config.static (contract section 11); null clears it. */
  static?: { outputDirectory?: string | null; spa?: boolean | null; cleanUrls?: boolean | null } | null;
}

export type ConfigColumns = Pick<
  ProjectRow,
  | 'name'
  | 'gitOwner'
  | 'gitRepo'
  | 'gitBranch'
  | 'framework'
  | 'buildCommand'
  | 'gitProvider'
  | 'installCommand'
  | 'startCommand'
  | 'outputDirectory'
  | 'rootDirectory'
  | 'port'
  | 'packageManager'
  | 'runtime'
  | 'staticSpa'
  | 'staticCleanUrls'
  | 'dockerfile'
  | 'httpsRedirect'
  | 'hsts'
  | 'healthPath'
  | 'autoRollback'
  | 'sourceType'
  | 'localPath'
>;

/** The columns of a new project before its input is merged in. */
export function blankConfig(localPath: string | null): ConfigColumns {
  return {
    name: '',
    gitOwner: null,
    gitRepo: null,
    gitBranch: null,
    framework: null,
    buildCommand: null,
    gitProvider: null,
    installCommand: null,
    startCommand: null,
    outputDirectory: null,
    rootDirectory: null,
    port: DEFAULT_PORT,
    packageManager: null,
    runtime: null,
    staticSpa: null,
    staticCleanUrls: null,
    dockerfile: null,
    httpsRedirect: null,
    hsts: null,
    healthPath: null,
    autoRollback: null,
    sourceType: 'none',
    localPath,
  };
}

export const emptyToNull = (v: string | null | undefined): string | null | undefined => (typeof v === 'string' && v.trim() === '' ? null : v);

/** The input's keys that carry a value (the audit event's `fields`). */
export const changedFields = (input: object): string[] => Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined);

/** Validates the given fields and merges them over `base`; derives the source type. */
export function mergeInput(base: ConfigColumns, input: ProjectInput): ConfigColumns {
  const out: ConfigColumns = { ...base };
  if (input.name !== undefined) {
    const name = input.name.trim();
    if (!name) throw invalid('name', 'name must not be empty');
    out.name = name;
  }
  const str = (k: 'framework' | 'buildCommand' | 'installCommand' | 'startCommand' | 'packageManager' | 'runtime') => {
    const v = emptyToNull(input[k]);
    if (v !== undefined) out[k] = v === null ? null : v.trim();
  };
  for (const k of ['framework', 'buildCommand', 'installCommand', 'startCommand', 'packageManager', 'runtime'] as const) str(k);
  for (const k of ['outputDirectory', 'rootDirectory', 'dockerfile'] as const) {
    const v = emptyToNull(input[k]);
    if (v !== undefined) out[k] = v === null ? null : checkRelativeDir(v, k);
  }
  if (input.static === null) {
    out.outputDirectory = null;
    out.staticSpa = null;
    out.staticCleanUrls = null;
  } else if (input.static) {
    const st = input.static;
    if (st.outputDirectory !== undefined) {
      const v = emptyToNull(st.outputDirectory);
      out.outputDirectory = v === null || v === undefined ? null : checkRelativeDir(v, 'static.outputDirectory');
    }
    if (st.spa !== undefined) out.staticSpa = st.spa === null ? null : st.spa ? 1 : 0;
    if (st.cleanUrls !== undefined) out.staticCleanUrls = st.cleanUrls === null ? null : st.cleanUrls ? 1 : 0;
  }
  if (input.port !== undefined) out.port = input.port;
  if (input.httpsRedirect !== undefined) out.httpsRedirect = input.httpsRedirect === null ? null : input.httpsRedirect ? 1 : 0;
  if (input.hsts !== undefined) out.hsts = input.hsts === null ? null : input.hsts ? 1 : 0;
  if (input.autoRollback !== undefined) out.autoRollback = input.autoRollback === null ? null : input.autoRollback ? 1 : 0;
  const health = emptyToNull(input.healthPath);
  if (health !== undefined) {
    if (health !== null && (!health.startsWith('/') || /[\s\x00-\x1f]/.test(health))) throw invalid('healthPath', 'healthPath must be a path starting with / (no spaces)');
    out.healthPath = health;
  }
  const owner = emptyToNull(input.gitOwner);
  if (owner !== undefined) out.gitOwner = owner === null ? null : checkGitOwner(owner, 'gitOwner');
  const repo = emptyToNull(input.gitRepo);
  if (repo !== undefined) out.gitRepo = repo === null ? null : checkGitRepo(repo, 'gitRepo');
  const branch = emptyToNull(input.gitBranch);
  if (branch !== undefined) out.gitBranch = branch === null ? null : checkBranch(branch, 'gitBranch');
  const provider = emptyToNull(input.gitProvider);
  if (provider !== undefined) out.gitProvider = provider === null ? null : provider.trim().toLowerCase();

  if (out.gitProvider === 'upload') {
    out.sourceType = 'upload';
  } else if (out.gitOwner || out.gitRepo) {
    if (!out.gitOwner) throw invalid('gitOwner', 'gitOwner is required when gitRepo is set');
    if (!out.gitRepo) throw invalid('gitRepo', 'gitRepo is required when gitOwner is set');
    out.sourceType = 'git';
    out.gitProvider = out.gitProvider ?? 'github';
  } else if (out.localPath) {
    out.sourceType = 'local';
  } else {
    out.sourceType = 'none';
  }
  return out;
}
