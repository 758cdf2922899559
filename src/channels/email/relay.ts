// The SMTP relay the agents' mail leaves through (issue 47; SMTP_RELAY_URL): nodemailer's SMTP
// transport, configured by a URL. Each send is one attempt with an answer the outbox can act on:
// sent, refused for good (an SMTP 5xx: retrying gets the same answer), or refused for now (a 4xx,
// a connection failure, a timeout: retry later). The URL carries the relay's password, so nothing
// this module says (errors, results) ever contains the URL or its credentials.
//
// The URL: `smtp://user:password@host:port` (plain, upgraded with STARTTLS when the relay offers
// it) or `smtps://user:password@host:port` (TLS from the first byte), the user and password
// percent-encoded. Query parameters, as nodemailer reads them: `tls.<option>` sets a TLS option
// (`?tls.rejectUnauthorized=false` accepts a relay's self-signed certificate; `?tls.servername=…`),
// and `requireTLS`, `ignoreTLS`, `name` (our EHLO name), `authMethod` (e.g. `PLAIN`). Any other
// parameter is refused: nodemailer would read `?sendmail=true` or `?logger=true` too.
import nodemailer from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';

export interface OutgoingMail {
  from: { name: string | null; address: string };
  to: string[];
  subject: string;
  text: string;
  /** `<id@domain>`, fixed before the first attempt: a resend after a lost acknowledgement is the same message. */
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  headers: Record<string, string>;
}

/**
 * A send's outcome. Sent: the relay's answer, and the recipients it refused while it took the
 * message for the others (a resend would repeat it to those). Not sent: whether retrying is of no
 * use (`permanent`), and why, without the URL's credentials.
 */
export type RelayResult = { ok: true; response: string; rejected: string[] } | { ok: false; permanent: boolean; error: string };

export interface Relay {
  send(mail: OutgoingMail): Promise<RelayResult>;
  close(): void;
}

export interface RelayOptions {
  /** The bound on connecting, on the relay's greeting, on any silence of the connection, and on the DNS lookup (default 30 s). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** An error string, at most (a relay's answer can be long). */
const ERROR_CHARS = 500;
const QUERY_KEYS = new Set(['requireTLS', 'ignoreTLS', 'name', 'authMethod']);

/** The relay the URL names, or null when none is set (the mail is then recorded as unsent). Throws, without the URL, when the URL is unusable. */
export function relayFromUrl(url: string | undefined, options: RelayOptions = {}): Relay | null {
  if (!url?.trim()) return null;
  const secrets = credentialsOf(url.trim());
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const transport = nodemailer.createTransport({
    ...(parseConnectionUrl(url.trim()) as SMTPTransport.Options),
    // Ours whatever the URL says: the bounds, and no logging (nodemailer's log has the AUTH exchange).
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    dnsTimeout: timeout,
    logger: false,
    debug: false,
    // The mail is text the service composed: nothing in it may make nodemailer read a file or a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return {
    async send(mail) {
      try {
        const info = await transport.sendMail({
          envelope: { from: mail.from.address, to: mail.to },
          from: mail.from.name ? { name: mail.from.name, address: mail.from.address } : mail.from.address,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          messageId: mail.messageId,
          ...(mail.inReplyTo && { inReplyTo: mail.inReplyTo }),
          ...(mail.references.length > 0 && { references: mail.references }),
          headers: mail.headers,
        });
        return { ok: true, response: redacted(String(info.response ?? ''), secrets), rejected: info.rejected.map(String) };
      } catch (error) {
        return failure(error as RelayError, secrets);
      }
    },
    close: () => transport.close(),
  };
}

interface RelayError extends Error {
  code?: string;
  responseCode?: number;
}

/** Refused for good: an SMTP 5xx (RFC 5321: the same message gets the same answer; 503 is a session's wrong state, not the message's), or a message nodemailer cannot send at all. */
function failure(error: RelayError, secrets: string[]): RelayResult {
  const code = error.responseCode;
  const permanent = code !== undefined ? code >= 500 && code < 600 && code !== 503 : error.code === 'EENVELOPE';
  const text = `${error.code ? `${error.code}: ` : ''}${error.message ?? String(error)}`;
  return { ok: false, permanent, error: redacted(text, secrets) };
}

/** The URL and its password, as written and decoded: what an error must never repeat. */
function credentialsOf(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // URL's own error keeps the input: say what is wrong without it.
    throw new Error('The SMTP relay URL is not a URL (smtp://user:password@host:port or smtps://…)');
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') throw new Error('The SMTP relay URL must start with smtp:// or smtps://');
  if (!parsed.hostname) throw new Error('The SMTP relay URL names no host');
  for (const key of parsed.searchParams.keys()) {
    if (!key.startsWith('tls.') && !QUERY_KEYS.has(key))
      throw new Error(`The SMTP relay URL's parameter ${JSON.stringify(key.slice(0, 40))} is not one the relay reads (tls.*, ${[...QUERY_KEYS].join(', ')})`);
  }
  const password = parsed.password;
  const decoded = safeDecode(password);
  return [url, password, decoded].filter((secret) => secret.length > 0);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The text with every secret replaced, longest first (the URL holds the password), and bounded. */
function redacted(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(secret).join('***');
  return out.length > ERROR_CHARS ? `${out.slice(0, ERROR_CHARS)}…` : out;
}
