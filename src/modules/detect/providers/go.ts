/**
 * The go provider, after Railpack's (core/providers/golang): a `go.mod` module, a `go.work`
 * workspace, or a lone `main.go`. The modules download first (`go mod download`), then one binary is
 * built to `out` (stripped, `-ldflags="-w -s"`) and run as `./out`. What is built, in Railpack's
 * order: the module's root package when the root holds `.go` files; else the first `cmd/<name>`
 * (alphabetically; Berth skips a `cmd/` folder with no `.go` file when another has one); else the
 * module root; for a workspace without a root module, its first module (alphabetically) with a
 * `main.go`; for a lone file, `main.go` itself.
 *
 * The version pin: what mise reads (`mise.toml`, `.tool-versions`, `.go-version`), else the `go`
 * line of `go.mod` (as Railpack), else that of `go.work` (Berth: a workspace has no root `go.mod`).
 * The `toolchain` line is not a pin to Railpack, nor here (the go command honours it by itself).
 * Go apps read $PORT themselves; 8080 is the usual default.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { fileVersion, toolVersion, type Pin } from './versions.js';

const BUILD = 'go build -ldflags="-w -s" -o out';

/** The `go` directive of a go.mod or go.work (`1.22`, `1.22.3`). */
const goLine = (text: string | null): string | null => /^\s*go\s+(\d+(?:\.\d+){0,2}(?:rc\d+)?)\s*$/m.exec(text ?? '')?.[1] ?? null;

/** The module folders a go.work uses (`use ./api` and `use ( ./a ./b )`), without `./`. */
export function goWorkUses(text: string): string[] {
  const out: string[] = [];
  const clean = text.replace(/\/\/.*$/gm, '');
  const norm = (p: string) => p.replace(/^"|"$/g, '').replace(/^\.\//, '').replace(/\/+$/, '');
  for (const m of clean.matchAll(/^\s*use\s*\(([\s\S]*?)\)/gm)) for (const p of m[1]!.split(/\s+/).filter(Boolean)) out.push(norm(p));
  for (const m of clean.matchAll(/^\s*use\s+([^\s(]+)\s*$/gm)) out.push(norm(m[1]!));
  return [...new Set(out)].filter((p) => p && p !== '.' && !p.split('/').includes('..'));
}

const hasGoFiles = (files: Set<string>): boolean => [...files].some((n) => n.endsWith('.go'));

function goVersion(f: Facts): Pin | null {
  const mise = toolVersion(f, ['go', 'golang']) ?? fileVersion(f, '.go-version');
  if (mise) return mise;
  const mod = goLine(f.read('go.mod'));
  if (mod) return { value: mod, source: 'go.mod' };
  const work = goLine(f.read('go.work'));
  return work ? { value: work, source: 'go.work' } : null;
}

/** The package to build (`.`, `./cmd/api`, `./api`, `main.go`), or null when there is none. */
function buildTarget(f: Facts): string | null {
  const mod = f.hasFile('go.mod');
  if (mod && hasGoFiles(f.files)) return '.';
  const cmds = f.hasDir('cmd') ? f.list('cmd').dirs.filter((d) => !d.startsWith('.')).sort() : [];
  if (cmds.length) return `./cmd/${cmds.find((c) => hasGoFiles(f.list(`cmd/${c}`).files)) ?? cmds[0]}`;
  if (mod) return '.';
  if (f.hasFile('go.work')) {
    const withMain = goWorkUses(f.read('go.work') ?? '').sort().find((m) => f.list(m).files.has('main.go'));
    return withMain ? `./${withMain}` : null;
  }
  return f.hasFile('main.go') ? 'main.go' : null;
}

export const goProvider: Provider = {
  name: 'go',
  detect: (f) => f.hasFile('go.mod') || f.hasFile('go.work') || f.hasFile('main.go'),
  plan(f): Detection {
    const d = detection('go', { packageManager: 'go', programs: ['go'] });
    const version = goVersion(f);
    if (version) d.version = version;
    if (f.hasFile('go.mod') || f.hasFile('go.work')) d.install = ['go mod download'];
    const target = buildTarget(f);
    if (target) {
      d.build = [target === '.' ? BUILD : `${BUILD} ${target}`];
      d.start = './out';
      d.port = 8080;
    }
    return d;
  },
};
