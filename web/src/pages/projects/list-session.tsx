import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';

/**
 * Renders the calling page again when the session is reset (sign-in, sign-out, an org switch:
 * useResetSession clears the query cache and loads `me` anew). An observer of a cleared query only
 * moves to its replacement on a render, and the org switcher navigates to `/` where the projects
 * list already is (no route change, no render): without this the list would keep the old org's
 * projects.
 */
export function useRenderOnSessionReset(): void {
  const qc = useQueryClient();
  const [, bump] = useState(0);
  useEffect(
    () =>
      qc.getQueryCache().subscribe((e) => {
        // Once the new `me` has arrived (a render before would find no session).
        if (e.type === 'updated' && e.action.type === 'success' && e.query.queryKey[0] === 'me') bump((n) => n + 1);
      }),
    [qc],
  );
}
