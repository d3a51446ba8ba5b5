/**
 * The php provider: a folder with a composer.json or an index.php (as Railpack detects it; Berth
 * also takes a lone `public/index.php`).
 *
 * Serving: Railpack serves PHP with FrankenPHP (Caddy with PHP built in) from its own image and a
 * start-container.sh script. Berth runs apps on the host without an image, so it plans PHP's own
 * server instead: `php -S 0.0.0.0:${PORT:-8080} -t <docroot>`, the document root being `public`
 * when the app has a public/ folder (Laravel, Symfony, Slim) and the app folder otherwise. For a
 * path with no file PHP's server answers the docroot's index.php, so front-controller apps route.
 *
 * - install: `composer install --no-dev --optimize-autoloader --no-interaction` when composer.json
 *   exists (Railpack's flags); a package.json adds the node provider's install and build (assets,
 *   e.g. Laravel with Vite), as Railpack does.
 * - build (Laravel, `artisan`): `php artisan config:cache`, `event:cache`, `route:cache`,
 *   `view:cache` — the caches Railpack builds (after the node build, or through `artisan optimize`
 *   in its start script). None needs a database. Railpack's start script also runs
 *   `php artisan migrate --force` and `storage:link`: Berth does not migrate on its own (that needs
 *   the database and is the app's decision), and leaves the storage link to the app.
 * - version: composer.json `require.php`, its first version number (`^8.2` → `8.2`, `8.2.*` → `8.2`,
 *   `>=8.1 <9` → `8.1`); Railpack only drops a leading `^` and hands the rest to its image lookup.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { addAssetTools, nodeAssetSteps } from './ruby-assets.js';

const LARAVEL_CACHES = ['php artisan config:cache', 'php artisan event:cache', 'php artisan route:cache', 'php artisan view:cache'];

function composerRequires(f: Facts): Record<string, unknown> {
  const req = f.json('composer.json')?.require;
  return req && typeof req === 'object' && !Array.isArray(req) ? (req as Record<string, unknown>) : {};
}

export const phpProvider: Provider = {
  name: 'php',
  detect: (f) => f.hasFile('composer.json') || f.hasFile('index.php') || (f.hasDir('public') && f.read('public/index.php') !== null),
  plan(f): Detection {
    const composer = f.hasFile('composer.json');
    const d = detection('php', { packageManager: composer ? 'composer' : null, programs: composer ? ['php', 'composer'] : ['php'], port: 8080 });
    const require = composerRequires(f);
    const php = require.php;
    const pin = typeof php === 'string' ? /\d+(?:\.\d+){0,2}/.exec(php.split('||')[0]!) : null;
    if (pin) d.version = { value: pin[0], source: 'composer.json' };

    if (composer) d.install.push('composer install --no-dev --optimize-autoloader --no-interaction');
    const assets = nodeAssetSteps(f);
    if (assets) {
      d.install.push(...assets.install);
      d.build.push(...assets.build);
      addAssetTools(d, assets.programs, assets.tools);
    }

    const laravel = f.hasFile('artisan');
    if (laravel) {
      d.framework = 'laravel';
      d.build.push(...LARAVEL_CACHES);
    } else if ('symfony/framework-bundle' in require) d.framework = 'symfony';
    else if ('slim/slim' in require) d.framework = 'slim';

    // public/ is the document root when it holds the front controller, or when the app has no index.php of its own.
    const publicRoot = f.hasDir('public') && (f.read('public/index.php') !== null || !f.hasFile('index.php'));
    const docroot = laravel || publicRoot ? 'public' : '.';
    d.start = `php -S 0.0.0.0:\${PORT:-8080} -t ${docroot}`;
    return d;
  },
};
