// An agent's outgoing mail, composed (issue 47): the subject, the thread's ids, the headers that
// keep other robots from answering it, and the service's footer. Pure: the caller stores the result
// (its Message-ID fixed) in the outbox before the relay ever sees it. Linear in its input: the
// subject and the ids come from a sender, so nothing here is a pattern that can backtrack.
import { randomUUID } from 'node:crypto';
import { wordsFor } from './mail-words';
import type { OutgoingMail } from './relay';

/** Ids a References header keeps, at most: the thread's first, and the latest (RFC 5322 §3.6.4 practice). */
export const MAX_REFERENCES = 20;
/** A subject's characters, at most (a sender's subject can fill a 1 MB header). */
export const SUBJECT_CHARS = 250;
/** An id's characters, at most; a longer "id" is not one we repeat. */
const MESSAGE_ID_CHARS = 250;
/** The text's characters, at most, before the footer. */
export const MAIL_TEXT_CHARS = 64 * 1024;

/** What clients put before a reply's subject, lower case: en/universal, de, sv/da/no, fi, nl, it, fr, pt, pl, zh. */
const REPLY_PREFIXES = new Set(['re', 'aw', 'sv', 'vs', 'antw', 'rif', 'réf', 'ref', 'res', 'odp', '回复', '答复']);
/** A prefix and its colon sit within this many characters of the start. */
const PREFIX_WINDOW = 12;

export interface Mailbox {
  name: string | null;
  address: string;
}

/** The subject of a reply: `Re: ` before the parent's, unless it already has a reply prefix (`Re:`, `AW:`, `Sv:`, `Re[2]:` …). */
export function replySubject(subject: string | null, locale: string): string {
  const clean = cleanSubject(subject);
  if (!clean) return `Re: ${wordsFor(locale).noSubject}`;
  return hasReplyPrefix(clean) ? clean : `Re: ${clean}`;
}

function hasReplyPrefix(subject: string): boolean {
  const window = subject.slice(0, PREFIX_WINDOW);
  let colon = window.indexOf(':');
  const wide = window.indexOf('：');
  if (colon < 0 || (wide >= 0 && wide < colon)) colon = wide;
  if (colon < 1) return false;
  let head = window.slice(0, colon);
  // `Re[2]:`, `Re(2):`: a count some clients add.
  for (const open of ['[', '(']) if (head.includes(open)) head = head.slice(0, head.indexOf(open));
  return REPLY_PREFIXES.has(head.trim().toLowerCase());
}

/** The subject on one line (control characters as spaces), trimmed and bounded; '' when there is none. */
function cleanSubject(subject: string | null): string {
  if (!subject) return '';
  let out = '';
  for (const char of subject) {
    if (out.length + char.length > SUBJECT_CHARS) break;
    const code = char.codePointAt(0)!;
    out += code < 0x20 || code === 0x7f ? ' ' : char;
  }
  return out.trim();
}

/** Whether a string is one `<…>` id we may repeat in a header: bounded, no space, no other angle bracket. */
function isMessageId(id: string): boolean {
  if (id.length < 3 || id.length > MESSAGE_ID_CHARS || !id.startsWith('<') || !id.endsWith('>')) return false;
  for (let i = 1; i < id.length - 1; i++) {
    const code = id.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f || code === 0x3c || code === 0x3e) return false;
  }
  return true;
}

/**
 * A reply's References: the parent's, then the parent's own id, each once (the last occurrence
 * kept, so the parent's id stays last), ids that are not `<…>` dropped. Past MAX_REFERENCES the
 * thread's first id and the latest others are kept.
 */
export function referencesFor(parentMessageId: string | null, parentReferences: readonly string[]): string[] {
  const all = parentMessageId ? [...parentReferences, parentMessageId] : parentReferences;
  const seen = new Set<string>();
  const latestFirst: string[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const id = all[i]!.trim();
    if (!isMessageId(id) || seen.has(id)) continue;
    seen.add(id);
    latestFirst.push(id);
  }
  const ids = latestFirst.reverse();
  return ids.length <= MAX_REFERENCES ? ids : [ids[0]!, ...ids.slice(ids.length - (MAX_REFERENCES - 1))];
}

/** A new Message-ID of ours: `<uuid@domain>`. Throws for a domain that cannot stand in one. */
export function newMessageId(domain: string): string {
  const lower = domain.trim().toLowerCase();
  if (!lower || lower.length > 253 || !/^[a-z0-9.-]+$/.test(lower)) throw new Error('not a domain a Message-ID can end with');
  return `<${randomUUID()}@${lower}>`;
}

/** The text, bounded, then the service's footer after a signature separator (RFC 3676 §4.3: clients fold it). */
function withFooter(text: string, locale: string): string {
  const body = text.length > MAIL_TEXT_CHARS ? `${cutAt(text, MAIL_TEXT_CHARS)}\n[…]` : text;
  return `${body.trimEnd()}\n\n-- \n${wordsFor(locale).agentFooter}\n`;
}

/** The first `chars` UTF-16 units, without splitting a surrogate pair. */
function cutAt(text: string, chars: number): string {
  const last = text.charCodeAt(chars - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? chars - 1 : chars);
}

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

/**
 * The agent's answer to a mail: to its sender, in its thread (In-Reply-To, References), marked
 * `Auto-Submitted: auto-replied` (RFC 3834: other responders leave it unanswered) and asking
 * Exchange not to send its own automatic answers back.
 */
export function composeReply(input: {
  from: Mailbox;
  parent: { from: string; subject: string | null; messageId: string | null; references: readonly string[] };
  text: string;
  locale: string;
}): OutgoingMail {
  const parentId = input.parent.messageId?.trim() ?? null;
  return {
    from: input.from,
    to: [input.parent.from],
    subject: replySubject(input.parent.subject, input.locale),
    text: withFooter(input.text, input.locale),
    messageId: newMessageId(domainOf(input.from.address)),
    inReplyTo: parentId && isMessageId(parentId) ? parentId : null,
    references: referencesFor(parentId, input.parent.references),
    headers: { 'Auto-Submitted': 'auto-replied', 'X-Auto-Response-Suppress': 'All' },
  };
}

/** A new mail an agent starts (`email.send`): no thread, `Auto-Submitted: auto-generated`. */
export function composeNew(input: { from: Mailbox; to: readonly string[]; subject: string | null; text: string; locale: string }): OutgoingMail {
  return {
    from: input.from,
    to: [...input.to],
    subject: cleanSubject(input.subject) || wordsFor(input.locale).noSubject,
    text: withFooter(input.text, input.locale),
    messageId: newMessageId(domainOf(input.from.address)),
    inReplyTo: null,
    references: [],
    headers: { 'Auto-Submitted': 'auto-generated', 'X-Auto-Response-Suppress': 'All' },
  };
}
