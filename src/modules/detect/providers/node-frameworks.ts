/**
 * Node frameworks, first match wins (so meta-frameworks come before the tools they are built on:
 * Remix, React Router and SvelteKit before Vite, NestJS before Express). What each row knows follows
 * what Railpack's node provider knows of it (core/providers/node/*.go):
 *
 * - `staticSite`: whether the folder builds a static site with the framework, and where its files land
 *   (Next `output: 'export'` -> `out`, Vite -> `dist` or `build.outDir`, CRA -> `build`, Angular ->
 *   angular.json's outputPath, Astro without a server adapter -> `dist`, React Router `ssr: false` ->
 *   `build/client`, Expo web -> `dist`, plus SvelteKit adapter-static and Gatsby). It is asked only when
 *   the folder builds (a build script, or the row's own `build`) and has no start script of its own.
 * - `start`: how the built app runs when package.json says nothing (no start script, `main` or
 *   index.js); `{exec} ` is replaced by the package manager's exec prefix (`npx `, `pnpm exec `, ...).
 */
import type { Facts } from '../facts.js';

const hasDep = (f: Facts, ...names: string[]) => names.some((n) => f.deps.has(n));
const buildScript = (f: Facts) => (f.script('build') ?? '').toLowerCase();

export interface StaticSite {
  /** Folder of the built files, relative to the app folder. */
  outputDirectory: string;
  /** Answer index.html for paths with no file. */
  spa: boolean;
}

export interface NodeFramework {
  id: string;
  name: string;
  /** Whether the folder uses the framework. */
  match(f: Facts): boolean;
  /** The static site the folder builds with the framework, or null when it runs as a server. */
  staticSite?(f: Facts): StaticSite | null;
  /** The build command when package.json has no build script (only where the framework's build is well known). */
  build?: string;
  /** How the built app runs when package.json names nothing to run. */
  start?(f: Facts): string | null;
  /** Where a server's build lands (informational). */
  output?: string;
  /** The port the framework's server listens on by default (they read $PORT). */
  port?: number;
  /** Variables a server build and the app run with (as Railpack sets them). */
  variables?(f: Facts): Record<string, string> | null;
}

/** JavaScript source without its comments (strings kept), so a commented-out option is not read. */
export function stripComments(src: string): string {
  let out = '';
  let quote = '';
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (quote) {
      out += c;
      if (c === '\\' && i + 1 < src.length) out += src[++i];
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      quote = c;
      out += c;
    } else if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 1;
    } else out += c;
  }
  return out;
}

/** The first of `names` the folder has, read without comments ('' when none). */
export function configText(f: Facts, names: string[]): string {
  for (const n of names) {
    if (!f.hasFile(n)) continue;
    const text = f.read(n);
    if (text !== null) return stripComments(text);
  }
  return '';
}

/** The value of `key: 'literal'` in a config, only when it is a plain string literal (not `'a' + b`, not a template with `${}`). */
export function literalOption(text: string, key: string): string | null {
  const re = new RegExp(`(?:^|[\\s{,])['"]?${key}['"]?\\s*:\\s*(['"\`])([^'"\`$\\n]+)\\1\\s*(?=[,}\\n]|$)`, 'm');
  const m = re.exec(text);
  return m ? m[2]!.trim() : null;
}

const clean = (dir: string) => dir.replace(/^\.\//, '').replace(/\/+$/, '') || '.';

const VITE_CONFIGS = ['vite.config.ts', 'vite.config.js', 'vite.config.mjs', 'vite.config.mts', 'vite.config.cjs', 'vite.config.cts'];
const NEXT_CONFIGS = ['next.config.js', 'next.config.mjs', 'next.config.ts', 'next.config.cjs'];
const ASTRO_CONFIGS = ['astro.config.mjs', 'astro.config.ts', 'astro.config.js', 'astro.config.mts', 'astro.config.cjs'];
const RR_CONFIGS = ['react-router.config.ts', 'react-router.config.js'];
const SVELTE_CONFIGS = ['svelte.config.js', 'svelte.config.mjs', 'svelte.config.ts'];

/** Vite's output folder: `build.outDir` of vite.config (a plain literal), `vite build --outDir x`, else `dist`. */
export function viteOutput(f: Facts): string {
  const fromConfig = literalOption(configText(f, VITE_CONFIGS), 'outDir');
  if (fromConfig) return clean(fromConfig);
  const m = /vite\s+build\b[^&;|]*?--outDir[= ]([^\s&;|-][^\s&;|]*)/.exec(f.script('build') ?? '');
  return m ? clean(m[1]!) : 'dist';
}

/** Angular's output folder from angular.json: outputPath, plus `/browser` with the application builder. */
export function angularOutput(f: Facts): string | null {
  const a = f.json('angular.json');
  const projects = a?.projects && typeof a.projects === 'object' ? a.projects : {};
  const names = Object.keys(projects);
  const name = typeof a?.defaultProject === 'string' && projects[a.defaultProject] ? a.defaultProject : names.find((n) => projects[n]?.projectType !== 'library') ?? names[0];
  if (!name) return null;
  const build = projects[name]?.architect?.build ?? projects[name]?.targets?.build;
  const opts = build?.options ?? {};
  const application = (typeof build?.builder === 'string' && /:application$/.test(build.builder)) || typeof opts.browser === 'string';
  const out = opts.outputPath;
  if (out && typeof out === 'object' && typeof out.base === 'string') return clean(`${clean(out.base)}/${typeof out.browser === 'string' ? out.browser : 'browser'}`);
  const base = typeof out === 'string' ? clean(out) : `dist/${name}`;
  return application ? `${base}/browser` : base;
}

/** Meta-frameworks that carry Vite without being a Vite single-page app. */
const VITE_HOSTS = ['@remix-run/dev', '@react-router/dev', '@sveltejs/kit', 'nuxt', 'astro', '@tanstack/react-start', '@tanstack/solid-start', '@tanstack/start', '@solidjs/start', '@builder.io/qwik-city', 'vike', 'vitepress'];
const ASTRO_ADAPTERS = ['@astrojs/node', '@astrojs/vercel', '@astrojs/cloudflare', '@astrojs/netlify'];
const TANSTACK_START = ['@tanstack/react-start', '@tanstack/solid-start', '@tanstack/start'];

/**
 * Whether a TanStack Start app builds with Nitro into `.output/server/index.mjs`: the Vinxi era
 * (`app.config.*`, `vinxi`), releases before 1.132 (Nitro built in), or a Nitro plugin in vite.config.
 * Later releases build `dist/server/server.js`, a fetch handler that srvx serves (Railpack's start).
 */
export function tanstackNitro(f: Facts): boolean {
  if (hasDep(f, 'vinxi', 'nitro', 'nitropack', '@tanstack/nitro-v2-vite-plugin') || f.matching(/^app\.config\.[cm]?[jt]s$/).length) return true;
  if (/\bnitro(?:V2Plugin)?\s*\(/.test(configText(f, VITE_CONFIGS))) return true;
  const range = TANSTACK_START.map((n) => f.pkg?.dependencies?.[n] ?? f.pkg?.devDependencies?.[n]).find((v) => typeof v === 'string') as string | undefined;
  const m = /^[\^~>=v\s]*(\d+)\.(\d+)/.exec(range ?? '');
  return !!m && (Number(m[1]) < 1 || (Number(m[1]) === 1 && Number(m[2]) < 132));
}

export const NODE_FRAMEWORKS: NodeFramework[] = [
  // ---------------------------------------------------------------- meta-frameworks
  {
    id: 'next', name: 'Next.js', match: (f) => hasDep(f, 'next'),
    staticSite(f) {
      const config = configText(f, NEXT_CONFIGS);
      const exported = /\boutput\s*:\s*['"]export['"]/.test(config) || buildScript(f).includes('next export') || (f.script('export') ?? '').includes('next export');
      return exported ? { outputDirectory: clean(literalOption(config, 'distDir') ?? 'out'), spa: true } : null;
    },
    start: () => '{exec} next start', output: '.next', port: 3000,
  },
  { id: 'nuxt', name: 'Nuxt', match: (f) => hasDep(f, 'nuxt', 'nuxt3'), start: () => 'node .output/server/index.mjs', output: '.output', port: 3000 },
  {
    id: 'remix', name: 'Remix', match: (f) => hasDep(f, '@remix-run/dev', '@remix-run/node', '@remix-run/react'),
    start: (f) => (hasDep(f, '@remix-run/serve') ? (VITE_CONFIGS.some((c) => f.hasFile(c)) ? '{exec} remix-serve ./build/server/index.js' : '{exec} remix-serve ./build/index.js') : null),
    output: 'build', port: 3000,
  },
  {
    id: 'react-router', name: 'React Router',
    match: (f) => hasDep(f, '@react-router/dev') || RR_CONFIGS.some((c) => f.hasFile(c)) || buildScript(f).includes('react-router build'),
    staticSite(f) {
      const config = configText(f, RR_CONFIGS);
      if (!/(?:^|[{,])\s*['"]?ssr['"]?\s*:\s*false\b/m.test(config)) return null;
      return { outputDirectory: `${clean(literalOption(config, 'buildDirectory') ?? 'build')}/client`, spa: true };
    },
    start: (f) => (hasDep(f, '@react-router/serve') ? '{exec} react-router-serve ./build/server/index.js' : null),
    output: 'build', port: 3000,
  },
  {
    id: 'sveltekit', name: 'SvelteKit', match: (f) => hasDep(f, '@sveltejs/kit'),
    staticSite(f) {
      if (!hasDep(f, '@sveltejs/adapter-static')) return null;
      const config = configText(f, SVELTE_CONFIGS);
      return { outputDirectory: clean(literalOption(config, 'pages') ?? 'build'), spa: literalOption(config, 'fallback') !== null };
    },
    start: (f) => (hasDep(f, '@sveltejs/adapter-node', '@sveltejs/adapter-auto') ? 'node build' : null),
    // As Railpack: adapter-auto builds for Node when it sees this buildpack signal.
    variables: (f) => (hasDep(f, '@sveltejs/adapter-auto') && !hasDep(f, '@sveltejs/adapter-node') ? { GCP_BUILDPACKS: 'true' } : null),
    output: 'build', port: 3000,
  },
  {
    id: 'astro', name: 'Astro', match: (f) => hasDep(f, 'astro'),
    staticSite(f) {
      const config = configText(f, ASTRO_CONFIGS);
      if (!buildScript(f).includes('astro build') || hasDep(f, ...ASTRO_ADAPTERS) || /\boutput\s*:\s*['"]server['"]/.test(config)) return null;
      return { outputDirectory: clean(literalOption(config, 'outDir') ?? 'dist'), spa: false };
    },
    start: (f) => (hasDep(f, '@astrojs/node') ? 'node ./dist/server/entry.mjs' : null),
    // The Node adapter listens on localhost unless HOST says otherwise (Railpack sets it too).
    variables: () => ({ HOST: '0.0.0.0' }),
    output: 'dist', port: 4321,
  },
  { id: 'gatsby', name: 'Gatsby', match: (f) => hasDep(f, 'gatsby'), staticSite: () => ({ outputDirectory: 'public', spa: false }), port: 9000 },
  {
    id: 'angular', name: 'Angular', match: (f) => hasDep(f, '@angular/core') || f.hasFile('angular.json'),
    staticSite(f) {
      if (!f.hasFile('angular.json') || !buildScript(f).includes('ng build')) return null;
      const out = angularOutput(f);
      return out ? { outputDirectory: out, spa: true } : null;
    },
    port: 4200,
  },
  { id: 'cra', name: 'Create React App', match: (f) => hasDep(f, 'react-scripts'), staticSite: (f) => (buildScript(f).includes('react-scripts build') ? { outputDirectory: 'build', spa: true } : null) },
  {
    id: 'expo', name: 'Expo', match: (f) => hasDep(f, 'expo'),
    staticSite(f) {
      const build = buildScript(f);
      const output = String(f.json('app.json')?.expo?.web?.output ?? '').toLowerCase();
      const web = hasDep(f, 'react-native-web') || build.includes('expo export:web');
      if (!web || !(output === 'static' || output === 'single' || build.includes('expo export'))) return null;
      // The legacy webpack export (`expo export:web`) writes web-build; `expo export` writes dist.
      return { outputDirectory: build.includes('expo export:web') ? 'web-build' : 'dist', spa: true };
    },
    build: '{exec} expo export --platform web',
    port: 8081,
  },
  {
    id: 'tanstack-start', name: 'TanStack Start', match: (f) => hasDep(f, ...TANSTACK_START),
    // srvx is not the app's dependency: npx fetches it, as in Railpack's plan.
    start: (f) => (tanstackNitro(f) ? 'node .output/server/index.mjs' : 'npx srvx --prod -s ../client dist/server/server.js'),
    port: 3000,
  },
  // ---------------------------------------------------------------- Vite single-page apps
  {
    id: 'vite', name: 'Vite', match: (f) => hasDep(f, 'vite') && !hasDep(f, ...VITE_HOSTS),
    staticSite: (f) => (buildScript(f).includes('vite build') || VITE_CONFIGS.some((c) => f.hasFile(c)) ? { outputDirectory: viteOutput(f), spa: true } : null),
    port: 5173,
  },
  // ---------------------------------------------------------------- servers
  { id: 'nestjs', name: 'NestJS', match: (f) => hasDep(f, '@nestjs/core'), start: () => 'node dist/main', output: 'dist', port: 3000 },
  { id: 'hono', name: 'Hono', match: (f) => hasDep(f, 'hono'), port: 3000 },
  { id: 'fastify', name: 'Fastify', match: (f) => hasDep(f, 'fastify'), port: 3000 },
  { id: 'koa', name: 'Koa', match: (f) => hasDep(f, 'koa'), port: 3000 },
  { id: 'express', name: 'Express', match: (f) => hasDep(f, 'express'), port: 3000 },
];

/**
 * Start commands that run a tool listening on its own port whatever $PORT says, and the flags that
 * make it listen on $PORT (and on every interface, where it binds localhost by default). Matched
 * against the last command of the start script, after `npx`-style prefixes.
 */
export interface PortFlagRow {
  tool: string;
  test: RegExp;
  flags: string;
  /** The tool's own default port. */
  port: number;
}

export const PORT_FLAGS: PortFlagRow[] = [
  { tool: 'ng serve', test: /^ng\s+serve\b/, flags: '--port ${PORT} --host 0.0.0.0', port: 4200 },
  { tool: 'vite preview', test: /^vite\s+preview\b/, flags: '--port ${PORT} --host 0.0.0.0', port: 4173 },
  { tool: 'vite', test: /^vite(?!\s+(?:build|optimize)\b)(?:\s|$)/, flags: '--port ${PORT} --host 0.0.0.0', port: 5173 },
  { tool: 'astro preview', test: /^astro\s+(?:preview|dev|start)\b/, flags: '--port ${PORT} --host 0.0.0.0', port: 4321 },
  { tool: 'nuxt preview', test: /^(?:nuxt|nuxi)\s+(?:preview|start|dev)\b/, flags: '--port ${PORT}', port: 3000 },
  { tool: 'serve', test: /^serve(?:\s|$)/, flags: '-l ${PORT}', port: 3000 },
  { tool: 'http-server', test: /^http-server(?:\s|$)/, flags: '-p ${PORT}', port: 8080 },
  { tool: 'webpack serve', test: /^(?:webpack\s+serve|webpack-dev-server)(?:\s|$)/, flags: '--port ${PORT} --host 0.0.0.0', port: 8080 },
  { tool: 'vue-cli-service serve', test: /^vue-cli-service\s+serve\b/, flags: '--port ${PORT} --host 0.0.0.0', port: 8080 },
  { tool: 'docusaurus serve', test: /^docusaurus\s+(?:serve|start)\b/, flags: '--port ${PORT} --host 0.0.0.0', port: 3000 },
  { tool: 'gatsby serve', test: /^gatsby\s+(?:serve|develop)\b/, flags: '-p ${PORT} -H 0.0.0.0', port: 9000 },
  { tool: 'sirv', test: /^sirv(?:\s|$)/, flags: '--port ${PORT} --host 0.0.0.0', port: 8080 },
];

/** The last command of a script (`npm run build && vite preview` -> `vite preview`), without env assignments or an exec prefix. */
export function lastCommand(script: string): string {
  const parts = script.split(/&&|\|\||;|\|/);
  let cmd = (parts[parts.length - 1] ?? '').trim();
  for (;;) {
    const next = cmd
      .replace(/^[A-Za-z_][A-Za-z0-9_]*=(?:"[^"]*"|'[^']*'|\S*)\s+/, '')
      .replace(/^(?:npx|bunx|pnpx|cross-env|dotenv\s+--|env)\s+(?:(?:-y|--yes|--no-install)\s+)*/, '')
      .replace(/^(?:pnpm|yarn)\s+(?:exec|dlx)\s+/, '');
    if (next === cmd) return cmd;
    cmd = next;
  }
}

/** The port-flag row for a start script, or null when its tool reads $PORT itself (or is unknown). */
export function portFlagRow(script: string): PortFlagRow | null {
  const cmd = lastCommand(script);
  return PORT_FLAGS.find((r) => r.test.test(cmd)) ?? null;
}

const validPort = (s: string | undefined): number | null => {
  const n = s ? Number(s) : NaN;
  return n >= 1 && n <= 65535 ? n : null;
};

/** A literal port a script pins (`--port 4200`, `-p 4200`, `-l 4200`, `PORT=4200`), or null. */
export function literalPort(script: string | null): number | null {
  if (!script) return null;
  const m = /(?:--port[= ]\s*|(?:^|\s)-p[= ]?\s*|(?:^|\s)(?:-l|--listen)[= ]?\s*(?:tcp:\/\/[^:\s]*:)?|(?:^|\s)PORT=)(\d{2,5})\b/.exec(script);
  return validPort(m?.[1]);
}

/** Whether a script already hands $PORT to its server (`$PORT`, `${PORT}`, `${PORT:-3000}`). */
export function readsPort(script: string): boolean {
  return /\$(?:PORT\b|\{PORT[}:])/.test(script);
}

/** The fallback of a `${PORT:-3000}` in a script, or null. */
export function portFallback(script: string | null): number | null {
  return validPort(/\$\{PORT:-(\d{2,5})\}/.exec(script ?? '')?.[1]);
}
