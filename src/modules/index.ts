import type { ModuleDef } from '../http/route.js';
import { authModule } from './auth/auth.routes.js';

/** Every area's module, in registration order. Add a new area here. */
export const areaModules: ModuleDef[] = [authModule];
