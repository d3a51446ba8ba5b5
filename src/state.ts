/**
 * Per-server state of the areas: what one running server keeps in memory for one area's own use
 * (caches, counters, abort handles, event buses). Each area declares its entry here by declaration
 * merging, in its own module, and makes it in its ModuleDef's `state(ctx)`:
 *
 *   declare module '../../state.js' {
 *     interface AreaState { uploads: UploadsState }
 *   }
 *
 * buildApp() makes every module's state before any `provides` or `init`, so two servers in one
 * process (tests, the scale suite) never share any. Other areas never read another's entry: what
 * they need goes through a port (src/ports.ts). Types only: this file imports nothing.
 */
export interface AreaState {}
