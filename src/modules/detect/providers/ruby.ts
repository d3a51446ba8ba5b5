/**
 * The ruby provider: a folder with a Gemfile, installed with bundler, as Railpack plans it.
 *
 * - install: `bundle install`, then `bundle exec bootsnap precompile --gemfile` when bootsnap is a
 *   dependency. Railpack installs the gems into the image's own gem home (GEM_HOME=/usr/local/bundle);
 *   a Berth build runs on the host, where the system gem directory is not the app's to write, so the
 *   gems go into the release instead: `bundle config set --local path vendor/bundle` first (kept in
 *   the app's .bundle/config, which `bundle exec` reads again when the app starts). Railpack also
 *   runs `gem install -N bundler:<BUNDLED WITH>`; Berth leaves that out (it too writes to the host's
 *   gem directory, and bundler since 2.3 switches itself to the version the lockfile was bundled with).
 * - A package.json beside the Gemfile adds the node provider's install and build (asset bundling),
 *   before the Rails build, as Railpack does. The app stays a ruby app.
 * - build (Rails): `bundle exec rake assets:precompile` when an asset pipeline gem (sprockets,
 *   propshaft) is used, `bundle exec bootsnap precompile app/ lib/` with bootsnap.
 * - start, first match: Rails (`config/application.rb` with `Rails::Application`) runs
 *   `bundle exec bin/rails server -b 0.0.0.0 -p ${PORT:-3000} -e ${RAILS_ENV:-production}` (Railpack
 *   writes `-e $RAILS_ENV`; an unset variable would be an empty argument here, so it defaults);
 *   an old Rails app (`config/environment.rb` and `script/`) runs `script/server`; a `config.ru`
 *   runs `bundle exec rackup config.ru -o 0.0.0.0 -p ${PORT:-3000}`; a Rakefile runs `bundle exec rake`.
 *   Berth adds one case Railpack has no plan for: a classic Sinatra app without a config.ru runs its
 *   file (`bundle exec ruby app.rb -o 0.0.0.0 -p ${PORT:-4567}`), before the Rakefile fallback.
 * - version: `.ruby-version`, mise.toml / .tool-versions, then the Gemfile's `ruby "x.y"`, then the
 *   `RUBY VERSION` of Gemfile.lock (Railpack reads the lockfile and lets mise's files win).
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { addAssetTools, nodeAssetSteps } from './ruby-assets.js';
import { pinned, type Pin } from './versions.js';

/** Whether the Gemfile or Gemfile.lock mentions a gem (a plain substring test, as Railpack's). */
function uses(f: Facts, dep: string): boolean {
  return ['Gemfile', 'Gemfile.lock'].some((file) => (f.read(file) ?? '').includes(dep));
}

function usesRails(f: Facts): boolean {
  return (f.read('config/application.rb') ?? '').includes('Rails::Application');
}

/** The Ruby version the Gemfile (`ruby "3.3.0"`) or Gemfile.lock (`RUBY VERSION` / `ruby 3.3.0p0`) names. */
function gemfileVersion(f: Facts): Pin | null {
  const gemfile = /^\s*ruby\s+['"]([^'"]+)['"]/m.exec(f.read('Gemfile') ?? '');
  const fromGemfile = gemfile?.[1]?.replace(/^[~><=!\s]+/, '').trim();
  if (fromGemfile && /^\d/.test(fromGemfile)) return { value: fromGemfile, source: 'Gemfile' };
  const lock = /^RUBY VERSION\s*\n\s+ruby\s+(\d+\.\d+\.\d+)/m.exec(f.read('Gemfile.lock') ?? '');
  return lock ? { value: lock[1]!, source: 'Gemfile.lock' } : null;
}

/** The file a classic Sinatra app runs from, when it has no config.ru. */
function sinatraEntry(f: Facts): string | null {
  for (const c of ['app.rb', 'main.rb', 'server.rb', 'application.rb']) {
    if (/require\s+['"]sinatra/.test(f.read(c) ?? '')) return c;
  }
  return null;
}

export const rubyProvider: Provider = {
  name: 'ruby',
  detect: (f) => f.hasFile('Gemfile'),
  plan(f): Detection {
    const d = detection('ruby', { packageManager: 'bundler', programs: ['ruby', 'bundle'] });
    const version = pinned(f, ['.ruby-version'], ['ruby']) ?? gemfileVersion(f);
    if (version) d.version = version;

    const rails = usesRails(f);
    const bootsnap = uses(f, 'bootsnap');
    d.install = ['bundle config set --local path vendor/bundle', 'bundle install'];
    if (bootsnap) d.install.push('bundle exec bootsnap precompile --gemfile');

    const assets = nodeAssetSteps(f);
    if (assets) {
      d.install.push(...assets.install);
      d.build.push(...assets.build);
      addAssetTools(d, assets.programs, assets.tools);
    }
    if (rails && (uses(f, 'sprockets') || uses(f, 'propshaft'))) d.build.push('bundle exec rake assets:precompile');
    if (rails && bootsnap) d.build.push('bundle exec bootsnap precompile app/ lib/');

    const sinatra = uses(f, 'sinatra');
    if (rails) {
      d.framework = 'rails';
      d.start = f.hasFile('rails')
        ? 'bundle exec rails server -b 0.0.0.0 -p ${PORT:-3000}'
        : 'bundle exec bin/rails server -b 0.0.0.0 -p ${PORT:-3000} -e ${RAILS_ENV:-production}';
      d.port = 3000;
    } else if (f.read('config/environment.rb') !== null && f.hasDir('script')) {
      d.framework = 'rails';
      d.start = 'bundle exec ruby script/server -b 0.0.0.0 -p ${PORT:-3000}';
      d.port = 3000;
    } else if (f.hasFile('config.ru')) {
      d.framework = sinatra ? 'sinatra' : 'rack';
      d.start = 'bundle exec rackup config.ru -o 0.0.0.0 -p ${PORT:-3000}';
      d.port = 3000;
    } else if (sinatra && sinatraEntry(f)) {
      d.framework = 'sinatra';
      d.start = `bundle exec ruby ${sinatraEntry(f)} -o 0.0.0.0 -p \${PORT:-4567}`;
      d.port = 4567;
    } else if (f.hasFile('Rakefile')) {
      d.start = 'bundle exec rake';
    }
    return d;
  },
};
