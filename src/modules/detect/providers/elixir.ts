/** The elixir provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const elixirProvider: Provider = {
  name: 'elixir',
  detect: () => false,
  plan(): Detection {
    return detection('elixir');
  },
};
