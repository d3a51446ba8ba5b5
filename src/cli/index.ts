#!/usr/bin/env node
import { buildProgram } from './program.js';

// Whatever a berth command writes (the database, the secret key, client config) is its user's alone.
process.umask(0o077);

await buildProgram().parseAsync(process.argv);
