/**
 * Node frameworks, first match wins (so meta-frameworks come before the tools they are built on:
 * Remix and SvelteKit before Vite, NestJS before Express). A row matches when any of `deps` is a
 * dependency or any of `files` exists, and `when` (if any) holds. `{pm} ` in a command is replaced
 * by the package manager's exec prefix (`npx`, `pnpm exec`, `yarn`, `bunx`).
 *
 * `kind: 'static'` rows produce files only (served from `output`, no start command, no port);
 * `'server'` rows are started with `start` and listen on `port` (the app should honour $PORT).
 */
import type { Facts } from '../facts.js';

const hasDep = (f: Facts, ...names: string[]) => names.some((n) => f.deps.has(n));

export interface NodeFramework {
  id: string;
  name: string;
  kind: 'static' | 'server';
  /** Static sites: answer index.html for paths with no file (single-page apps). */
  spa?: boolean;
  deps?: string[];
  files?: string[];
  /** Extra condition beyond deps/files (for example an adapter). */
  when?: (f: Facts) => boolean;
  build?: string | null;
  start?: string | null | ((f: Facts) => string | null);
  output?: string | null | ((f: Facts) => string | null);
  port?: number | null;
}

export const NODE_FRAMEWORKS: NodeFramework[] = [
  // ---------------------------------------------------------------- Node: meta-frameworks
  { id: 'next', name: 'Next.js', kind: 'server', deps: ['next'], build: '{pm} next build', start: '{pm} next start', output: '.next', port: 3000 },
  { id: 'nuxt', name: 'Nuxt', kind: 'server', deps: ['nuxt', 'nuxt3'], build: '{pm} nuxt build', start: 'node .output/server/index.mjs', output: '.output', port: 3000 },
  {
    id: 'react-router', name: 'React Router', kind: 'server',
    deps: ['@react-router/dev'], build: '{pm} react-router build',
    start: (f) => (hasDep(f, '@react-router/serve') ? '{pm} react-router-serve ./build/server/index.js' : null),
    output: 'build', port: 3000,
  },
  {
    id: 'remix', name: 'Remix', kind: 'server',
    deps: ['@remix-run/dev', '@remix-run/react'], build: '{pm} remix build',
    start: (f) => (f.hasFile('vite.config.ts') || f.hasFile('vite.config.js') ? '{pm} remix-serve ./build/server/index.js' : '{pm} remix-serve ./build/index.js'),
    output: 'build', port: 3000,
  },
  {
    id: 'sveltekit', name: 'SvelteKit', kind: 'server',
    deps: ['@sveltejs/kit'], when: (f) => !hasDep(f, '@sveltejs/adapter-static'),
    build: '{pm} vite build', start: 'node build', output: 'build', port: 3000,
  },
  { id: 'sveltekit', name: 'SvelteKit (static)', kind: 'static', deps: ['@sveltejs/adapter-static'], build: '{pm} vite build', output: 'build' },
  {
    id: 'astro', name: 'Astro (server)', kind: 'server',
    deps: ['astro'], when: (f) => hasDep(f, '@astrojs/node'),
    build: '{pm} astro build', start: 'node ./dist/server/entry.mjs', output: 'dist', port: 4321,
  },
  { id: 'astro', name: 'Astro', kind: 'static', deps: ['astro'], build: '{pm} astro build', output: 'dist' },
  { id: 'gatsby', name: 'Gatsby', kind: 'static', deps: ['gatsby'], build: '{pm} gatsby build', output: 'public' },
  { id: 'angular', spa: true, name: 'Angular', kind: 'static', deps: ['@angular/core'], files: ['angular.json'], build: '{pm} ng build', output: (f) => f.angularOutput() },
  { id: 'cra', spa: true, name: 'Create React App', kind: 'static', deps: ['react-scripts'], build: '{pm} react-scripts build', output: 'build' },
  // ---------------------------------------------------------------- Node: Vite single-page apps
  { id: 'vite', spa: true, name: 'Vite', kind: 'static', deps: ['vite'], build: '{pm} vite build', output: 'dist' },
  // ---------------------------------------------------------------- Node: servers
  { id: 'nestjs', name: 'NestJS', kind: 'server', deps: ['@nestjs/core'], build: '{pm} nest build', start: 'node dist/main', port: 3000 },
  { id: 'hono', name: 'Hono', kind: 'server', deps: ['hono'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'fastify', name: 'Fastify', kind: 'server', deps: ['fastify'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'koa', name: 'Koa', kind: 'server', deps: ['koa'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'express', name: 'Express', kind: 'server', deps: ['express'], start: (f) => f.nodeEntryStart(), port: 3000 },
];
