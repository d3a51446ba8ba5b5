/** The dotnet provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const dotnetProvider: Provider = {
  name: 'dotnet',
  detect: () => false,
  plan(): Detection {
    return detection('dotnet');
  },
};
