import { api, call } from '../../api/client';

/** The API's mask for a secret's value (GET env never answers a secret in clear). */
export const MASK = '********';

export type EnvVar = Awaited<ReturnType<typeof fetchEnv>>['vars'][number];

export const envKey = (projectId: string, environment: string) => ['project', projectId, 'env', environment] as const;

/** The variables of one environment and the ETag of the set (sent back as If-Match when saving). */
export async function fetchEnv(id: string, environment: string) {
  const answer = api.GET('/api/projects/{id}/env', { params: { path: { id }, query: { environment } } });
  const body = await call(answer);
  return { vars: body.data, etag: (await answer).response.headers.get('etag') };
}
export type EnvSet = Awaited<ReturnType<typeof fetchEnv>>;

/**
 * One row of the editor. `orig` is the variable as last read (null for a new row). A secret's value
 * is never known here: `value` of an existing secret is what the user typed after "Replace".
 */
export interface Row {
  uid: string;
  key: string;
  value: string;
  isSecret: boolean;
  orig: EnvVar | null;
  replacing: boolean;
  removed: boolean;
}

let seq = 0;
export const newUid = () => `r${++seq}`;

export function rowsOf(vars: EnvVar[]): Row[] {
  return vars.map((v) => ({ uid: newUid(), key: v.key, value: v.isSecret ? '' : v.value, isSecret: v.isSecret, orig: v, replacing: false, removed: false }));
}

export function blankRow(isSecret = false): Row {
  return { uid: newUid(), key: '', value: '', isSecret, orig: null, replacing: false, removed: false };
}

export interface Upsert {
  key: string;
  value: string;
  isSecret?: boolean;
}

/** The merge PATCH a draft makes, and which row each upsert and delete came from (to show an error at it). */
export interface EnvPatch {
  upserts: Upsert[];
  deletes: string[];
  upsertRows: string[];
  deleteRows: string[];
}

/** Is the row a change to save? (Blank new rows are not.) */
export function rowChange(r: Row): 'add' | 'update' | 'remove' | null {
  if (!r.orig) return r.removed || (r.key === '' && r.value === '') ? null : 'add';
  if (r.removed) return 'remove';
  if (r.orig.isSecret) return r.replacing ? 'update' : null;
  return r.value !== r.orig.value || r.isSecret !== r.orig.isSecret ? 'update' : null;
}

export function patchOf(rows: Row[]): EnvPatch {
  const p: EnvPatch = { upserts: [], deletes: [], upsertRows: [], deleteRows: [] };
  for (const r of rows) {
    const change = rowChange(r);
    if (change === 'remove') {
      p.deletes.push(r.orig!.key);
      p.deleteRows.push(r.uid);
    } else if (change) {
      p.upserts.push({ key: r.key, value: r.value, isSecret: r.isSecret });
      p.upsertRows.push(r.uid);
    }
  }
  return p;
}

/** What the set will be once the patch is saved (secrets masked, as the API answers them). */
export function applied(vars: EnvVar[], patch: EnvPatch, environment: string): EnvVar[] {
  const now = new Date().toISOString();
  const out = vars.filter((v) => !patch.deletes.includes(v.key));
  for (const u of patch.upserts) {
    const next: EnvVar = { key: u.key, value: u.isSecret ? MASK : u.value, isSecret: !!u.isSecret, environment, updatedAt: now };
    const i = out.findIndex((v) => v.key === u.key);
    if (i >= 0) out[i] = next;
    else out.push(next);
  }
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * `.env` lines -> pairs: `KEY=value`, `export KEY=value`, quoted values ("..." with \n escapes,
 * '...' literal), `#` comments and blank lines skipped. Lines without `=` are reported by number.
 */
export function parseDotenv(text: string): { pairs: Array<{ key: string; value: string }>; bad: number[] } {
  const pairs: Array<{ key: string; value: string }> = [];
  const bad: number[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([^=\s]+)\s*=\s*(.*)$/.exec(line);
    if (!m) {
      bad.push(i + 1);
      return;
    }
    let value = m[2]!;
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1).replace(/\\n/g, '\n').replace(/\\"/g, '"');
    else if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) value = value.slice(1, -1);
    else value = value.replace(/\s+#.*$/, '');
    pairs.push({ key: m[1]!, value });
  });
  return { pairs, bad };
}

/** Pasted pairs merged into the draft: a key already there takes the new value; others become new rows. */
export function mergePairs(rows: Row[], pairs: Array<{ key: string; value: string }>, asSecret: boolean): Row[] {
  const out = rows.filter((r) => !(r.orig === null && r.key === '' && r.value === ''));
  for (const { key, value } of pairs) {
    const i = out.findIndex((r) => r.key === key);
    if (i >= 0) {
      const r = out[i]!;
      out[i] = { ...r, value, removed: false, replacing: r.orig?.isSecret ? true : r.replacing, isSecret: asSecret || r.isSecret };
    } else out.push({ ...blankRow(asSecret), key, value });
  }
  return out;
}
