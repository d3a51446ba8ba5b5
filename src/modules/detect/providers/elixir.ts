/**
 * The elixir provider: a folder with a mix.exs, built into a release as Railpack plans it.
 *
 * - install: `mix local.hex --force`, `mix local.rebar --force`, `mix deps.get --only prod`,
 *   `mix deps.compile`, and `mix assets.setup` when mix.exs defines that alias. A Phoenix
 *   `assets/package.json` is installed too (`npm ci --prefix assets`, ...), as Railpack installs it.
 * - build: `mix compile`, `mix assets.deploy` / `mix ecto.deploy` when mix.exs names them, `mix release`.
 * - start: the release, `_build/prod/rel/<app>/bin/<app> start` (`<app>` from `app: :name`).
 *   Phoenix gets a leading `PHX_SERVER=true` (what `mix phx.gen.release`'s bin/server sets), so the
 *   release starts its endpoint; it reads `PORT` (default 4000) in config/runtime.exs.
 * Railpack sets MIX_ENV=prod for every step through the image's environment; Berth writes it as a
 * leading `MIX_ENV=prod` on each mix command that depends on it.
 * - version: mise.toml / .tool-versions, then `.elixir-version`, then mix.exs `elixir: "~> 1.15"`
 *   (the order in which Railpack lets them override each other).
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { addAssetTools, subfolderInstall } from './ruby-assets.js';
import { fileVersion, toolVersion, type Pin } from './versions.js';

const ENV = 'MIX_ENV=prod';

/** The OTP application name (`app: :hello`). */
export function mixAppName(mix: string): string | null {
  const m = /\bapp:\s*:([A-Za-z_][\w]*)/.exec(mix);
  return m ? m[1]! : null;
}

function mixVersion(mix: string): Pin | null {
  const m = /\belixir:\s*"[~>=<\s]*(\d+(?:\.\d+){0,2})/.exec(mix);
  return m ? { value: m[1]!, source: 'mix.exs' } : null;
}

function version(f: Facts, mix: string): Pin | null {
  return toolVersion(f, ['elixir']) ?? fileVersion(f, '.elixir-version') ?? mixVersion(mix);
}

export const elixirProvider: Provider = {
  name: 'elixir',
  detect: (f) => f.hasFile('mix.exs'),
  plan(f): Detection {
    const mix = f.read('mix.exs') ?? '';
    const phoenix = /[:{]\s*:?phoenix\b/.test(mix);
    const d = detection('elixir', { packageManager: 'mix', programs: ['mix', 'elixir'], framework: phoenix ? 'phoenix' : null });
    const v = version(f, mix);
    if (v) d.version = v;

    d.install = ['mix local.hex --force', 'mix local.rebar --force', `${ENV} mix deps.get --only prod`, `${ENV} mix deps.compile`];
    if (/assets\.setup/.test(mix)) d.install.push(`${ENV} mix assets.setup`);
    const assets = subfolderInstall(f, 'assets');
    if (assets) {
      d.install.push(assets.command);
      addAssetTools(d, [assets.program], [assets.tool]);
    }

    d.build = [`${ENV} mix compile`];
    if (/assets\.deploy/.test(mix)) d.build.push(`${ENV} mix assets.deploy`);
    if (/ecto\.deploy/.test(mix)) d.build.push(`${ENV} mix ecto.deploy`);
    d.build.push(`${ENV} mix release`);

    const app = mixAppName(mix);
    if (app) {
      const bin = `_build/prod/rel/${app}/bin/${app}`;
      d.start = `${phoenix ? 'PHX_SERVER=true ' : ''}${bin} start`;
      d.outputDirectory = `_build/prod/rel/${app}`;
    }
    if (phoenix) d.port = 4000;
    return d;
  },
};
