/**
 * What the node provider asks of a folder beyond its package.json scripts:
 *
 * - `nxBuild`: in an Nx workspace (`nx.json` and the `nx` package at the workspace root), an app with
 *   no build script builds with its Nx target, `nx build <project>`, as Railpack does
 *   (core/providers/node/nx.go): Nx infers the target from its plugins (`@nx/next/plugin` for a
 *   Next.js app) or reads it from project.json. `nx` runs from the workspace's `node_modules/.bin`,
 *   which build steps have on PATH.
 * - `isFrontEnd`: a folder of browser code (an `index.html`, a UI library or bundler, and no server
 *   package). Its `src/main.js` is the page's script, so it is never started as a server.
 */
import path from 'node:path';
import type { Facts } from '../facts.js';

const NEXT_CONFIGS = ['next.config.js', 'next.config.mjs', 'next.config.ts', 'next.config.cjs'];

/** A project name Berth can put in a command as one word (`@scope/web`, `web`). */
const safeProject = (name: unknown): string | null => (typeof name === 'string' && /^[@A-Za-z0-9][\w@./-]*$/.test(name) ? name : null);

/** The Nx build command of the app folder, or null when it is not an Nx project with a build target Berth can tell. */
export function nxBuild(f: Facts): string | null {
  const top = f.top;
  if (!top.hasFile('nx.json') || !(top.deps.has('nx') || f.deps.has('nx'))) return null;
  const project = f.json('project.json');
  const target = !!project?.targets?.build;
  // As Railpack: a Next.js app of the workspace (its own next.config, or a member package that uses next).
  const next = f.deps.has('next') && (NEXT_CONFIGS.some((c) => f.hasFile(c)) || f !== top);
  if (!target && !next) return null;
  const name = safeProject(project?.name) ?? safeProject(f.pkg?.name) ?? safeProject(path.posix.basename(f.rel));
  return name ? `nx build ${name}` : null;
}

/** Packages that make a folder browser code (UI libraries and bundlers). */
const FRONT_END_DEPS = ['react', 'react-dom', 'vue', 'svelte', 'solid-js', 'preact', 'lit', '@angular/core', 'vite', 'webpack', 'parcel', '@vitejs/plugin-react', '@sveltejs/vite-plugin-svelte'];
/** Packages that make a folder a server, whatever else it carries. */
const SERVER_DEPS = ['express', 'fastify', 'koa', 'hono', '@hono/node-server', '@nestjs/core', '@hapi/hapi', 'restify', 'polka', 'h3', 'elysia', 'socket.io', 'ws', 'http-proxy'];

/** Whether the folder is browser code with no server of its own. */
export function isFrontEnd(f: Facts): boolean {
  if (SERVER_DEPS.some((d) => f.deps.has(d))) return false;
  return f.hasFile('index.html') || FRONT_END_DEPS.some((d) => f.deps.has(d));
}
