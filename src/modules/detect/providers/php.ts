/** The php provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const phpProvider: Provider = {
  name: 'php',
  detect: () => false,
  plan(): Detection {
    return detection('php');
  },
};
