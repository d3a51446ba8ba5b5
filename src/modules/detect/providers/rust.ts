/** The rust provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const rustProvider: Provider = {
  name: 'rust',
  detect: () => false,
  plan(): Detection {
    return detection('rust');
  },
};
