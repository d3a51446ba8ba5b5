import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';
import { invalid } from '../../lib/errors.js';

/** `My App!` -> `my-app`; at most 40 characters; `project` when nothing is left. */
export function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return s || 'project';
}

const OWNER_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO_RE = /^[A-Za-z0-9._-]{1,100}$/;

export function checkGitOwner(v: string, field: string): string {
  const s = v.trim();
  if (!OWNER_RE.test(s)) throw invalid(field, `${field} must be a repository owner name (letters, digits and dashes, at most 39 characters)`);
  return s;
}

export function checkGitRepo(v: string, field: string): string {
  const s = v.trim().replace(/\.git$/, '');
  if (!REPO_RE.test(s) || s === '.' || s === '..') throw invalid(field, `${field} must be a repository name (letters, digits, '.', '_' and '-', at most 100 characters)`);
  return s;
}

/** Git branch names as `git check-ref-format --branch` takes them (the parts that matter here). */
export function checkBranch(v: string, field: string): string {
  const s = v.trim();
  const bad =
    s.length === 0 ||
    s.length > 255 ||
    /[\x00-\x20\x7f~^:?*[\\]/.test(s) ||
    s.includes('..') ||
    s.includes('@{') ||
    s.includes('//') ||
    s.startsWith('/') ||
    s.startsWith('-') ||
    s.endsWith('/') ||
    s.endsWith('.') ||
    s.endsWith('.lock') ||
    s === '@';
  if (bad) throw invalid(field, `${field} must be a valid git branch name`);
  return s;
}

/** A folder inside the project: relative, no `..`, no leading `/` or `~`. Empty or `.` is the root. */
export function checkRelativeDir(v: string, field: string): string {
  const s = v.trim().replace(/\\/g, '/');
  if (s.startsWith('/') || s.startsWith('~') || /^[A-Za-z]:/.test(s) || s.split('/').includes('..') || /[\x00-\x1f]/.test(s)) {
    throw invalid(field, `${field} must be a relative folder inside the project (no "..", not absolute)`);
  }
  return s.replace(/^\.\/+/, '').replace(/\/+$/, '') || '.';
}

/**
 * A hostname as a domain to serve: IDNA to ASCII (punycode), lowercase, no trailing dot, no port,
 * no wildcard, no scheme or path, not an IP address, at least two labels.
 */
export function normalizeHostname(input: string, field: string, opts: { allowPort?: boolean } = {}): string {
  let s = input.trim().toLowerCase();
  if (!s) throw invalid(field, `${field} must not be empty`);
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(s) || s.includes('/') || s.includes('@') || s.includes('?') || s.includes('#')) {
    throw invalid(field, `${field} must be a bare hostname such as app.example.com (no scheme or path)`);
  }
  if (s.includes('*')) throw invalid(field, `${field} must not be a wildcard domain`);
  let port = '';
  const m = /^(.*):(\d+)$/.exec(s);
  if (m && !s.startsWith('[')) {
    if (!opts.allowPort) throw invalid(field, `${field} must not carry a port`);
    const n = Number(m[2]);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw invalid(field, `${field} has an invalid port`);
    s = m[1]!;
    port = `:${n}`;
  } else if (s.includes(':') || s.startsWith('[')) {
    throw invalid(field, `${field} must be a hostname, not an IP address or a port`);
  }
  s = s.replace(/\.$/, '');
  if (isIP(s)) throw invalid(field, `${field} must be a hostname, not an IP address`);
  const ascii = domainToASCII(s);
  if (!ascii) throw invalid(field, `${field} is not a valid hostname`);
  const labels = ascii.split('.');
  const labelOk = (l: string) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l);
  if (ascii.length > 253 || labels.length < 2 || !labels.every(labelOk) || /^\d+$/.test(labels[labels.length - 1]!)) {
    throw invalid(field, `${field} is not a valid hostname (labels of letters, digits and dashes, at least two labels)`);
  }
  return ascii + port;
}
