/** The shell provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const shellProvider: Provider = {
  name: 'shell',
  detect: () => false,
  plan(): Detection {
    return detection('shell');
  },
};
