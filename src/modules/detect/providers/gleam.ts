/**
 * The gleam provider: a folder with a gleam.toml, as Railpack plans it: `gleam export
 * erlang-shipment` builds a self-contained Erlang release, started by its entrypoint script
 * (`./build/erlang-shipment/entrypoint.sh run`, run directly: it is the shipment's own launcher).
 * Programs: `gleam` to build, `erl` to run. Version: mise.toml / .tool-versions (`gleam`), as Railpack
 * reads it; gleam.toml's `gleam = ">= 1.0.0"` is a range, not a pin.
 */
import { detection, type Detection, type Provider } from '../plan.js';
import { toolVersion } from './versions.js';

export const gleamProvider: Provider = {
  name: 'gleam',
  detect: (f) => f.hasFile('gleam.toml'),
  plan(f): Detection {
    const d = detection('gleam', { packageManager: 'gleam', programs: ['gleam', 'erl'] });
    const v = toolVersion(f, ['gleam']);
    if (v) d.version = v;
    d.build = ['gleam export erlang-shipment'];
    d.start = './build/erlang-shipment/entrypoint.sh run';
    d.outputDirectory = 'build/erlang-shipment';
    return d;
  },
};
