/**
 * The folder-upload flow of contract section 5, steps 1-3: open a session, send the tarball to the
 * target it answers (XMLHttpRequest, for the progress of the upload), scan it.
 */
import { api, ApiError, data, toApiError } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';

export type UploadTarget = operations['postProjectsFolderSession']['responses'][201]['content']['application/json']['data'];
export type Scan = operations['postProjectsFolderScanBySessionId']['responses'][200]['content']['application/json']['data'];

export function openSession(name: string, sizeBytes: number): Promise<UploadTarget> {
  return data(api.POST('/api/projects/folder/session', { body: { name, sizeBytes } }));
}

export function scanUpload(sessionId: string): Promise<Scan> {
  return data(api.POST('/api/projects/folder/scan/{sessionId}', { params: { path: { sessionId } } }));
}

/**
 * Where the browser sends the tarball. The self-hosted relay is a route of this very server, but its
 * URL is built from the server's public address, which may be another name for it than the one in
 * the address bar (127.0.0.1 vs localhost): the browser would then refuse the request as
 * cross-origin. The relay's path on this page's origin is the same route.
 */
export function uploadUrl(target: Pick<UploadTarget, 'url'>, origin = window.location.origin): string {
  const u = new URL(target.url, origin);
  if (u.origin !== origin && u.pathname.startsWith('/api/projects/folder/upload/')) return origin + u.pathname + u.search;
  return u.toString();
}

/** Sends the tarball with the session's headers, reporting bytes sent; rejects with the server's error. */
export function sendTarball(target: UploadTarget, body: Blob, onProgress: (sent: number, total: number) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(target.method, uploadUrl(target));
    let typed = false;
    for (const [k, v] of Object.entries(target.headers)) {
      xhr.setRequestHeader(k, v);
      if (k.toLowerCase() === 'content-type') typed = true;
    }
    if (!typed) xhr.setRequestHeader('content-type', 'application/gzip');
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : body.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size, body.size);
        resolve();
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(xhr.responseText);
      } catch {
        parsed = undefined;
      }
      reject(toApiError(xhr.status, parsed));
    };
    xhr.onerror = () => reject(new ApiError(0, 'NETWORK', 'the upload could not reach the server'));
    xhr.onabort = () => reject(new ApiError(0, 'ABORTED', 'the upload was stopped'));
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(body);
  });
}

/** Does this file start like a gzip stream (1f 8b)? */
export async function looksGzipped(file: Blob): Promise<boolean> {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  return head[0] === 0x1f && head[1] === 0x8b;
}
