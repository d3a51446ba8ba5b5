import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import type { AppContext } from '../../context.js';
import { hmacSha256Hex } from '../../lib/crypto.js';
import { OutboundRefusedError, isOutboundRefused, outboundPolicy } from '../../lib/outbound.js';
import type { ChannelKind, Notice } from './events.js';

/**
 * One attempt to hand a notice to a channel: an HTTP POST (webhook, Slack and Discord incoming
 * webhooks) to an address checked against the outbound policy at connect time (contract section
 * 17), or a mail through `BERTH_SMTP_URL`. The outcome is said in Berth's words: a receiver's body or
 * a mail server's text is never kept or shown.
 */

export interface SendTarget {
  kind: ChannelKind;
  url: string | null;
  to: string | null;
  secret: string | null;
}

export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** false: trying again cannot help (the receiver said the request itself is wrong). */
  retry: boolean;
}

const HTTP_TIMEOUT_MS = 10_000;
const DISCORD_MAX = 2000;

export async function send(ctx: Pick<AppContext, 'config' | 'publicUrl'>, target: SendTarget, deliveryId: string, notice: Notice): Promise<SendOutcome> {
  if (target.kind === 'email') return sendMail(ctx, target.to!, notice);
  const { body, headers } = httpBody(target, deliveryId, notice);
  return post(ctx, target.url!, body, headers);
}

/** The request body of an HTTP channel and its headers (a webhook's signed with its secret). */
export function httpBody(target: SendTarget, deliveryId: string, n: Notice): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'Berth-Notifications' };
  if (target.kind === 'slack') {
    const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    return { body: JSON.stringify({ text: `*${esc(n.subject)}*\n${esc(n.detail)}${n.url ? `\n<${n.url}>` : ''}` }), headers };
  }
  if (target.kind === 'discord') {
    let content = `**${n.subject}**\n${n.detail}${n.url ? `\n${n.url}` : ''}`;
    if (content.length > DISCORD_MAX) content = `${content.slice(0, DISCORD_MAX - 1)}…`;
    // No @everyone or role pings from an app's error text.
    return { body: JSON.stringify({ content, allowed_mentions: { parse: [] } }), headers };
  }
  const body = JSON.stringify({ id: deliveryId, event: n.event, projectId: n.projectId, subject: n.subject, detail: n.detail, url: n.url, at: n.at });
  headers['x-berth-event'] = n.event;
  headers['x-berth-delivery'] = deliveryId;
  if (target.secret) headers['x-berth-signature'] = `sha256=${hmacSha256Hex(target.secret, body)}`;
  return { body, headers };
}

const fail = (error: string, retry = true, statusCode: number | null = null): SendOutcome => ({ ok: false, statusCode, error, retry });

/** A POST whose every connection goes only to addresses the outbound policy allows; redirects are not followed. */
async function post(ctx: Pick<AppContext, 'config'>, url: string, body: string, headers: Record<string, string>): Promise<SendOutcome> {
  const policy = outboundPolicy(ctx.config.hardening.outboundAllow);
  const u = new URL(url);
  try {
    await policy.resolve(u.hostname); // IP literals never reach the lookup below
  } catch (e) {
    if (e instanceof OutboundRefusedError) return fail(e.message);
    throw e;
  }
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise<SendOutcome>((resolve) => {
    const req = mod.request(u, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup: policy.lookup, agent: false, timeout: HTTP_TIMEOUT_MS }, (res) => {
      const code = res.statusCode ?? 0;
      res.resume(); // the body is never read into Berth
      res.on('error', () => {});
      if (code >= 200 && code < 300) return resolve({ ok: true, statusCode: code, error: null, retry: false });
      if (code >= 300 && code < 400) return resolve(fail(`the receiver answered HTTP ${code} (redirects are not followed)`, false, code));
      // A request the receiver calls wrong stays wrong; throttling and its own failures may pass.
      const retry = code >= 500 || code === 408 || code === 425 || code === 429;
      resolve(fail(`the receiver answered HTTP ${code}`, retry, code));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'BERTH_TIMEOUT' })));
    req.on('error', (e) => resolve(fail(describeNetError(e, u.host))));
    req.end(body);
  });
}

function describeNetError(e: unknown, host: string): string {
  if (isOutboundRefused(e)) return (e as Error).message;
  const code = (e as { code?: string }).code ?? '';
  if (code === 'BERTH_TIMEOUT') return `${host} did not answer within ${HTTP_TIMEOUT_MS / 1000} s`;
  if (code === 'ECONNREFUSED') return `${host} refused the connection`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${host} does not resolve`;
  if (code === 'ECONNRESET') return `${host} closed the connection`;
  if (/^(CERT_|ERR_TLS|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO)/.test(code)) return `the TLS certificate of ${host} was not accepted (${code})`;
  return `could not reach ${host}${code ? ` (${code})` : ''}`;
}

/** `BERTH_SMTP_URL` without its `from` parameter, and the sender address (`from`, else berth@<host>). */
export function smtpSettings(ctx: Pick<AppContext, 'config' | 'publicUrl'>): { url: string; from: string } | null {
  const raw = ctx.config.smtpUrl;
  if (!raw) return null;
  const u = new URL(raw);
  const from = u.searchParams.get('from');
  u.searchParams.delete('from');
  let host = os.hostname();
  try {
    host = new URL(ctx.publicUrl()).hostname || host;
  } catch {
    /* the machine's name */
  }
  return { url: u.toString(), from: from || `berth@${host}` };
}

async function sendMail(ctx: Pick<AppContext, 'config' | 'publicUrl'>, to: string, n: Notice): Promise<SendOutcome> {
  const smtp = smtpSettings(ctx);
  if (!smtp) return fail('email is not configured on this server (BERTH_SMTP_URL is not set)');
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport(smtp.url, { connectionTimeout: HTTP_TIMEOUT_MS, greetingTimeout: HTTP_TIMEOUT_MS, socketTimeout: 2 * HTTP_TIMEOUT_MS } as never);
  try {
    const text = `${n.detail}\n${n.url ? `\n${n.url}\n` : ''}\nEvent: ${n.event}\nAt: ${n.at}\n`;
    await transport.sendMail({ from: smtp.from, to, subject: `[Berth] ${n.subject}`, text, headers: { 'X-Berth-Event': n.event } });
    return { ok: true, statusCode: null, error: null, retry: false };
  } catch (e) {
    const { code, responseCode } = e as { code?: string; responseCode?: number };
    if (code === 'EAUTH') return fail('the mail server refused the login of BERTH_SMTP_URL');
    if (responseCode && responseCode >= 500) return fail(`the mail server refused the message (${responseCode})`, false);
    if (responseCode) return fail(`the mail server deferred the message (${responseCode})`);
    return fail(`could not send through the mail server${code ? ` (${code})` : ''}`);
  } finally {
    transport.close();
  }
}
