import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict, ERROR_STATUS, type ErrorCode } from '../../lib/errors.js';
import type { ProjectRow } from '../projects/index.js';
import type { Bundle } from './bundle.schema.js';
import { cloudLink, describeNetworkError, linkJson, linkRequest, unreachable, type LinkResponse } from './link.js';
import { newRecipientKey, openBundle, type SealedBundle } from './seal.js';
import { receiveSourceArchive } from './source.js';

/**
 * A project's copy on the cloud, as a transfer handles it over the link: read back (sealed to a
 * one-time key), its source archive pushed or pulled, deleted; the cloud's error answers turned into ours.
 */

/** An error answer of the cloud, turned into one of ours: its code when we have it, else 503. */
export function fromCloud(res: LinkResponse, doing: string): AppError {
  const code = res.body?.error?.code as string | undefined;
  const message = typeof res.body?.error?.message === 'string' ? res.body.error.message : `status ${res.status}`;
  if (code && code in ERROR_STATUS && code !== 'INTERNAL' && code !== 'UNAUTHENTICATED' && res.status < 500) {
    // The field it named (`managedServices.0.kind`, ...) names the same place of the bundle here.
    const field = typeof res.body?.error?.field === 'string' ? res.body.error.field.replace(/^bundle\./, '') : undefined;
    return new AppError(code as ErrorCode, `the cloud refused to ${doing}: ${message}`, field ? { field } : {});
  }
  return unreachable(`it failed to ${doing} (${message})`);
}

/** The error answer of a raw request over the link (its body read, JSON or not), as fromCloud turns it. */
async function rawFromCloud(res: Dispatcher.ResponseData, doing: string): Promise<AppError> {
  const text = await res.body.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return fromCloud({ status: res.statusCode, body }, doing);
}

export function requireLink(ctx: AppContext): void {
  if (!cloudLink(ctx)) throw unreachable('this instance has no cloud link (set BERTH_CLOUD_URL and BERTH_CLOUD_TOKEN)');
}

/** Reads a project's copy on the cloud back, sealed to a one-time key, and opens it in memory. */
export async function readCloudCopy(ctx: AppContext, cloudId: string, requestId?: string): Promise<Bundle> {
  const key = newRecipientKey();
  const res = await linkJson<{ data: SealedBundle }>(ctx, 'POST', `/api/projects/${encodeURIComponent(cloudId)}/export`, { recipientKey: key.publicKey }, {
    timeoutMs: 120_000,
    requestId,
  });
  if (res.status === 404) throw conflict('the cloud has no copy of this project (was it deleted there?)');
  if (res.status !== 200 || !res.body?.data?.bundle) throw fromCloud(res, 'read the project back');
  try {
    return openBundle(res.body.data, key);
  } catch {
    throw unreachable('its copy of the project could not be opened (sealed to another key or altered on the way)');
  }
}

/** Streams the local source archive to the cloud copy (which keeps its config as it is). */
export async function pushSourceArchive(ctx: AppContext, cloudId: string, file: string, sha256: string, requestId?: string): Promise<void> {
  const link = cloudLink(ctx)!;
  const size = (await stat(file)).size;
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, `${link.url}/api/projects/${encodeURIComponent(cloudId)}/source-archive?sha256=${sha256}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${link.token}`,
        'content-type': 'application/gzip',
        'content-length': String(size),
        ...(requestId ? { 'x-request-id': requestId } : {}),
      },
      body: createReadStream(file),
      signal: AbortSignal.timeout(30 * 60_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  if (res.statusCode !== 200) throw await rawFromCloud(res, 'take the project\'s source archive');
  // The success answer is read to its end too (so its connection goes back to the pool).
  await res.body.text().catch(() => '');
}

/** Streams the cloud copy's source archive into this instance as the project's uploaded source. */
export async function pullSourceArchive(ctx: AppContext, actor: Actor, row: ProjectRow, cloudId: string, sha256: string, requestId?: string): Promise<void> {
  const link = cloudLink(ctx)!;
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, `${link.url}/api/projects/${encodeURIComponent(cloudId)}/source-archive`, {
      method: 'GET',
      headers: { authorization: `Bearer ${link.token}`, ...(requestId ? { 'x-request-id': requestId } : {}) },
      signal: AbortSignal.timeout(30 * 60_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  if (res.statusCode !== 200) throw await rawFromCloud(res, 'send the project\'s source archive');
  try {
    await receiveSourceArchive(ctx, actor, row.orgId, row.id, res.body, sha256);
  } catch (e) {
    res.body.destroy();
    if (e instanceof AppError) throw e;
    throw unreachable(`the source archive did not arrive whole (${describeNetworkError(e)})`);
  }
}

/** Deletes a project on the cloud; true when it is gone (or was never there). */
export async function deleteCloudCopy(ctx: AppContext, cloudId: string, requestId?: string): Promise<boolean> {
  try {
    const res = await linkJson(ctx, 'DELETE', `/api/projects/${encodeURIComponent(cloudId)}`, undefined, { timeoutMs: 30_000, requestId });
    return (res.status >= 200 && res.status < 300) || res.status === 404;
  } catch {
    return false;
  }
}

