/**
 * Build detection for one app folder: applies the rules of detect.rules.ts (package manager,
 * framework, port) to the facts read by facts.ts and answers runtime, framework, package manager,
 * install, build and start commands, output directory and port. Workspaces are scan.ts.
 */
import type { Facts } from './facts.js';
import { FRAMEWORK_RULES, PACKAGE_MANAGER_RULES, RUNTIME_MARKERS, type FrameworkRule, type PackageManagerRule, type Runtime } from './detect.rules.js';

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
}

/** Which package manager the app uses: the `packageManager` field, then lockfiles (of the app or the workspace root). */
export function detectPackageManager(f: Facts): PackageManagerRule | null {
  const language = f.pkg ? 'node' : f.isPython ? 'python' : f.hasFile('go.mod') ? 'go' : null;
  if (!language) return null;
  const rules = PACKAGE_MANAGER_RULES.filter((r) => r.language === language);
  if (language === 'node') {
    const field = f.packageManagerField();
    if (field) return rules.find((r) => r.id === field.name) ?? null;
  }
  for (const r of rules) if (r.lockfiles.some((l) => f.hasFile(l) || f.top.hasFile(l))) return r;
  if (language === 'python' && /\[tool\.poetry\]/.test(f.read('pyproject.toml') ?? '')) return rules.find((r) => r.id === 'poetry')!;
  if (language === 'python' && f.hasFile('pyproject.toml')) return rules.find((r) => r.id === 'pip')!;
  return language === 'node' ? rules.find((r) => r.id === 'npm')! : rules[0] ?? null;
}

function matchFramework(f: Facts): FrameworkRule | null {
  const language = f.pkg ? 'node' : f.isPython ? 'python' : null;
  if (!language) return null;
  for (const rule of FRAMEWORK_RULES) {
    if (rule.language !== language) continue;
    const hit = (rule.deps ?? []).some((d) => f.deps.has(d)) || (rule.files ?? []).some((x) => f.hasFile(x));
    if (hit && (!rule.when || rule.when(f))) return rule;
  }
  return null;
}

function portFrom(script: string | null): number | null {
  if (!script) return null;
  const m = /(?:--port[= ]|-p\s+|PORT=)(\d{2,5})\b/.exec(script);
  const n = m ? Number(m[1]) : NaN;
  return n >= 1 && n <= 65535 ? n : null;
}

function value<T>(v: T | ((f: Facts) => T) | undefined, f: Facts): T | undefined {
  return typeof v === 'function' ? (v as (f: Facts) => T)(f) : v;
}

/** Detects one app folder. */
export function detectApp(f: Facts): DetectedApp {
  const base: DetectedApp = {
    rootDirectory: f.rel,
    name: typeof f.pkg?.name === 'string' ? f.pkg.name.slice(0, 214) : null,
    runtime: 'unknown',
    framework: null,
    packageManager: null,
    installCommand: null,
    buildCommand: null,
    startCommand: null,
    outputDirectory: null,
    port: null,
  };
  const pm = detectPackageManager(f);
  const rule = matchFramework(f);
  if (pm) {
    base.packageManager = pm.id;
    base.installCommand = typeof pm.install === 'function' ? pm.install(f) : pm.install;
  }
  const sub = (cmd: string | null | undefined): string | null => {
    if (!cmd) return null;
    const exec = pm?.exec ?? 'npx';
    return cmd.replace('{pm} ', exec ? `${exec} ` : '');
  };
  if (f.pkg) {
    base.runtime = 'node';
    const run = pm?.run ?? 'npm run';
    const build = f.script('build');
    const start = f.script('start');
    base.framework = rule?.id ?? null;
    base.buildCommand = build ? `${run} build` : sub(rule?.build ?? null);
    if (!rule || rule.kind === 'server') {
      base.startCommand = start ? `${run} start` : sub(value(rule?.start, f) ?? null) ?? (rule ? null : f.nodeEntryStart());
      base.port = portFrom(start) ?? rule?.port ?? 3000;
      if (!base.startCommand && !rule) base.port = null;
    }
    base.outputDirectory = value(rule?.output, f) ?? null;
    if (/^bun\s/.test(start ?? '') || (pm?.id === 'bun' && !rule && !start)) base.runtime = 'bun';
    if (!rule && !start && !base.startCommand && f.hasFile('index.html')) {
      // A package.json that only carries tooling around a static site.
      base.runtime = 'static';
      base.outputDirectory = build ? 'dist' : '.';
    }
  } else if (f.isPython) {
    base.runtime = 'python';
    base.framework = rule?.id ?? null;
    base.startCommand = value(rule?.start, f) ?? null;
    base.port = rule?.port ?? null;
    if (!rule) {
      const main = ['main.py', 'app.py', 'server.py'].find((x) => f.hasFile(x));
      if (main) {
        base.startCommand = `${pm?.exec ? pm.exec + ' ' : ''}python ${main}`;
        base.port = 8000;
      }
    }
    if (rule?.id === 'django') base.buildCommand = `${pm?.exec ? pm.exec + ' ' : ''}python manage.py collectstatic --noinput`;
  } else if (f.hasFile('go.mod')) {
    base.runtime = 'go';
    base.buildCommand = 'go build -o app .';
    base.startCommand = './app';
    base.port = 8080;
  } else {
    for (const m of RUNTIME_MARKERS) {
      if (m.runtime === 'docker') continue;
      if (m.files.some((x) => f.hasFile(x))) {
        base.runtime = m.runtime;
        break;
      }
    }
    if (base.runtime === 'static') base.outputDirectory = '.';
    if (base.runtime === 'deno') {
      base.startCommand = `deno run --allow-net --allow-env --allow-read ${['main.ts', 'server.ts', 'mod.ts'].find((x) => f.hasFile(x)) ?? 'main.ts'}`;
      base.port = 8000;
    }
  }
  // A Dockerfile says how to build and run: it wins over everything else.
  if (f.hasFile('Dockerfile')) {
    const docker = f.read('Dockerfile') ?? '';
    const expose = /^\s*EXPOSE\s+(\d{1,5})/im.exec(docker);
    base.runtime = 'docker';
    base.installCommand = null;
    base.buildCommand = null;
    base.startCommand = null;
    base.outputDirectory = null;
    base.port = expose ? Number(expose[1]) : (base.port ?? 3000);
  }
  return base;
}
