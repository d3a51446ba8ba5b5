/**
 * The providers, in the order they are asked (the first whose `detect` says yes plans the folder).
 * As in Railpack, languages whose projects often carry a package.json for their assets (PHP, Ruby,
 * Elixir, Python, ...) come before node, and static files and shell scripts come last.
 *
 * A Dockerfile plans the folder only when no language provider claims it (Railpack ignores
 * Dockerfiles; a template's Dockerfile beside a Vite or React Router app is not the build). A project
 * builds its Dockerfile anyway when it sets `config.dockerfile` (src/runtime/build.ts), and a folder
 * holding a Dockerfile and only static files, a Procfile or a start script is the Dockerfile's.
 */
import type { Provider } from '../plan.js';
import { denoProvider } from './deno.js';
import { cppProvider } from './cpp.js';
import { dockerProvider } from './docker.js';
import { dotnetProvider } from './dotnet.js';
import { elixirProvider } from './elixir.js';
import { gleamProvider } from './gleam.js';
import { goProvider } from './go.js';
import { javaProvider } from './java.js';
import { nodeProvider } from './node.js';
import { phpProvider } from './php.js';
import { pythonProvider } from './python.js';
import { rubyProvider } from './ruby.js';
import { rustProvider } from './rust.js';
import { shellProvider } from './shell.js';
import { staticProvider } from './static.js';

export const PROVIDERS: Provider[] = [
  phpProvider,
  goProvider,
  javaProvider,
  rustProvider,
  rubyProvider,
  elixirProvider,
  pythonProvider,
  denoProvider,
  dotnetProvider,
  nodeProvider,
  gleamProvider,
  cppProvider,
  dockerProvider,
  staticProvider,
  shellProvider,
];

export { applyProcfile } from './procfile.js';
export { applyRailpackConfig } from './railpack-config.js';
export { applyBerthConfig, berthRootDirectory } from './berth-config.js';
export { nodePackageManager } from './node-package-manager.js';
