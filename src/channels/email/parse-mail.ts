// A received mail as a run receives it (issue 47): who, to whom, the subject, the text (bounded),
// the thread's ids, the loop headers, and of each attachment only its name, type, size and SHA-256
// (the content streams through and is dropped: a tenant's sender cannot make the service hold it).
// mailparser's streaming parser, with its bounds on the header and the MIME tree.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AddressObject, AttachmentStream, MessageText } from 'mailparser';

/** The text a run gets, at most (the rest is cut, and the mail says so). */
export const MAIL_TEXT_CHARS = 32 * 1024;
/** Attachments listed, at most. */
export const MAIL_ATTACHMENTS_LISTED = 20;

export interface ParsedMail {
  from: string | null;
  to: string[];
  cc: string[];
  /** `Delivered-To` and `X-Original-To`: where a forwarding provider says it delivered the mail. */
  deliveredTo: string[];
  subject: string | null;
  text: string;
  textCut: boolean;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  autoSubmitted?: string;
  listId?: string;
  precedence?: string;
  attachments: { filename: string | null; contentType: string; size: number; sha256: string }[];
  attachmentsNotListed: number;
}

const addresses = (value: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(value) ? value : value ? [value] : []).flatMap((a) => a.value.map((v) => v.address ?? '').filter(Boolean));

const headerText = (value: unknown): string | undefined => {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'value' in value && typeof (value as { value: unknown }).value === 'string')
    return (value as { value: string }).value;
  return undefined;
};

// Loaded with the first mail, not at start: it is a tenth of a second of the service's start-up (docs/benchmarks.md, issue 47).
let mailparser: Promise<typeof import('mailparser')> | undefined;
const loadMailparser = () => (mailparser ??= import('mailparser'));

/** A subject's characters kept, at most (a sender's subject can fill a 1 MB header). */
export const SUBJECT_CHARS = 250;

const boundedText = (text: string | undefined, max: number): string | null => (text === undefined ? null : text.length > max ? `${text.slice(0, max)}…` : text);

/** A mail the parser could not read (a header past its bound, a broken structure): refused, not retried. */
export class MailUnreadable extends Error {}

export async function parseMail(raw: Buffer): Promise<ParsedMail> {
  try {
    return await parse(raw);
  } catch (err) {
    throw new MailUnreadable(`not a mail message this service can read: ${(err as Error).message.slice(0, 200)}`);
  }
}

async function parse(raw: Buffer): Promise<ParsedMail> {
  const { MailParser } = await loadMailparser();
  const parser = new MailParser({ checksumAlgo: 'sha256', skipTextToHtml: true, skipImageLinks: true, skipHtmlToText: false, maxChildNodes: 200 } as never);
  let headers = new Map<string, unknown>();
  let text = '';
  const attachments: ParsedMail['attachments'] = [];
  let notListed = 0;
  parser.on('headers', (h: Map<string, unknown>) => {
    headers = h;
  });
  parser.on('data', (part: AttachmentStream | MessageText) => {
    if (part.type === 'attachment') {
      const listed = attachments.length < MAIL_ATTACHMENTS_LISTED;
      if (!listed) notListed++;
      part.content.on('end', () => {
        if (listed) attachments.push({ filename: part.filename ?? null, contentType: part.contentType, size: part.size ?? 0, sha256: part.checksum ?? '' });
        part.release?.();
      });
      part.content.resume();
    } else text = part.text ?? '';
  });
  await pipeline(Readable.from([raw]), parser);
  const list = headers.get('list') as { id?: { id?: string; name?: string } } | undefined;
  const references = headers.get('references');
  return {
    from: addresses(headers.get('from') as AddressObject | undefined)[0] ?? null,
    to: addresses(headers.get('to') as AddressObject | undefined),
    cc: addresses(headers.get('cc') as AddressObject | undefined),
    deliveredTo: ['delivered-to', 'x-original-to'].flatMap((name) => headerText(headers.get(name)) ?? []).map((a) => a.trim()),
    subject: boundedText(headers.get('subject') as string | undefined, SUBJECT_CHARS),
    text: text.slice(0, MAIL_TEXT_CHARS),
    textCut: text.length > MAIL_TEXT_CHARS,
    messageId: (headers.get('message-id') as string | undefined) ?? null,
    inReplyTo: (headers.get('in-reply-to') as string | undefined) ?? null,
    references: Array.isArray(references) ? (references as string[]) : typeof references === 'string' ? references.split(/\s+/).filter(Boolean) : [],
    autoSubmitted: headerText(headers.get('auto-submitted')),
    listId: list?.id ? (list.id.id ?? list.id.name ?? 'listed') : undefined,
    precedence: headerText(headers.get('precedence')),
    attachments,
    attachmentsNotListed: notListed,
  };
}
