// A verified WhatsApp Business delivery as the service needs it (issue 47): the messages customers
// sent (who, when, what, which message it replies to) and the status reports of the messages the
// business sent. The rest of Meta's payload (pricing, conversation, media ids) is ignored, as is
// every change whose field is not `messages` (template and account updates).
// Everything read is bounded: the body's bytes (and so every array in it), 100 messages and 100
// status reports per delivery, the characters of every string. A value of the wrong type refuses
// the delivery, naming its JSON path, so that a change of Meta's format shows in the log at once.
import { NOT_JSON, parseJsonWithin } from '../../domain/json-limits';
import { cutToCharacters, longerThan } from './text-bounds';

/** Refused above this size; Meta's deliveries are a few KiB, 100 long texts fit with room to spare. */
export const WHATSAPP_DELIVERY_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Messages, and status reports, read from one delivery: the first this many, in the order Meta
 * sent them; the rest are counted (messagesNotRead, statusesNotRead) for the log, not read. Meta
 * batches far fewer, so a delivery with more is not a real one.
 */
export const WHATSAPP_ITEMS_READ = 100;
/** WhatsApp's own limit on a text message: a longer body is cut to it (textCut says so). */
export const WHATSAPP_INBOUND_TEXT_MAX = 4096;
/** Ids (wamid, wa_id, phone number id): a longer one is refused, since a cut id would match nothing. */
const ID_MAX = 256;
/** A profile name is cut to this. */
const NAME_MAX = 256;
/** A message type's name (`text`, `image`, `interactive`, ...). */
const TYPE_MAX = 64;
/** A failed status's error text (`code title: details`) is cut to this. */
const ERROR_MAX = 300;

export interface InboundWhatsApp {
  /** The message's wamid: the same on every redelivery, the key to deduplicate on. */
  id: string;
  /** The customer's WhatsApp id (their phone number, digits only). */
  from: string;
  /** The customer's profile name, when the delivery's contacts give one. */
  name: string | null;
  /** When the customer sent it (ISO 8601, from Meta's Unix seconds). */
  timestamp: string;
  type: string;
  /** `text.body` of a text message (at most WHATSAPP_INBOUND_TEXT_MAX characters); null for other types. */
  text: string | null;
  textCut: boolean;
  /** The message this one replies to, when the customer replied to one. */
  context: { from: string; id: string } | null;
  /** The business number it was sent to (a delivery may batch several numbers' changes). */
  phoneNumberId: string | null;
}

export type WhatsAppStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface StatusReport {
  /** The wamid of the message the business sent. */
  id: string;
  status: WhatsAppStatus;
  /** The customer's WhatsApp id. */
  recipient: string;
  timestamp: string;
  /** A failed message's first error as `code title: details`; null otherwise. */
  error: string | null;
  phoneNumberId: string | null;
}

export type WhatsAppDelivery =
  | {
      ok: true;
      /** The business number of the delivery's first change that names one. */
      phoneNumberId: string | null;
      messages: InboundWhatsApp[];
      statuses: StatusReport[];
      messagesNotRead: number;
      statusesNotRead: number;
    }
  | { ok: false; reason: string };

const STATUSES: ReadonlySet<string> = new Set<WhatsAppStatus>(['sent', 'delivered', 'read', 'failed']);

/** A value of the wrong type at a path: thrown inside this module only, answered as ok:false. */
class Malformed extends Error {}
function refuse(path: string, rule: string): never {
  throw new Malformed(`${path}: ${rule}`);
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function objectAt(value: unknown, path: string): Json {
  return isObject(value) ? value : refuse(path, 'must be an object');
}

/** An optional member: absent (or null) is undefined, anything but an object is refused. */
function optionalObjectAt(value: unknown, path: string): Json | undefined {
  return value === undefined || value === null ? undefined : objectAt(value, path);
}

function optionalArrayAt(value: unknown, path: string): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : refuse(path, 'must be an array');
}

function idAt(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0) return refuse(path, 'must be a non-empty string');
  return value.length <= ID_MAX ? value : refuse(path, `must be at most ${ID_MAX} characters`);
}

function optionalIdAt(value: unknown, path: string): string | null {
  return value === undefined || value === null ? null : idAt(value, path);
}

/** An optional free text, cut to `max` characters. */
function optionalTextAt(value: unknown, path: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? cutToCharacters(value, max) : refuse(path, 'must be a string');
}

/** Meta's Unix seconds (a string of digits, or a number) as ISO 8601. */
function timestampAt(value: unknown, path: string): string {
  const seconds = typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 0 || seconds > 999_999_999_999)
    return refuse(path, 'must be Unix seconds (a string of at most 12 digits)');
  return new Date(seconds * 1000).toISOString();
}

/** What the delivery's changes add up to, and how many items there were beyond the bound. */
interface Collected {
  phoneNumberId: string | null;
  messages: InboundWhatsApp[];
  statuses: StatusReport[];
  messagesNotRead: number;
  statusesNotRead: number;
  /** Status reports read so far, the untracked ones too: the bound counts them. */
  statusesSeen: number;
}

function readMessage(raw: unknown, path: string, names: Map<string, string>, phoneNumberId: string | null): InboundWhatsApp {
  const message = objectAt(raw, path);
  const from = idAt(message.from, `${path}.from`);
  const type = idAt(message.type, `${path}.type`);
  if (longerThan(type, TYPE_MAX)) refuse(`${path}.type`, `must be at most ${TYPE_MAX} characters`);
  let text: string | null = null;
  let textCut = false;
  if (type === 'text') {
    const body = objectAt(message.text, `${path}.text`).body;
    if (typeof body !== 'string') refuse(`${path}.text.body`, 'must be a string');
    text = cutToCharacters(body, WHATSAPP_INBOUND_TEXT_MAX);
    textCut = text.length !== body.length;
  }
  // A forwarded message's context carries only `forwarded`: it replies to nothing.
  const context = optionalObjectAt(message.context, `${path}.context`);
  const repliesTo =
    context && context.id !== undefined ? { from: idAt(context.from, `${path}.context.from`), id: idAt(context.id, `${path}.context.id`) } : null;
  return {
    id: idAt(message.id, `${path}.id`),
    from,
    name: names.get(from) ?? null,
    timestamp: timestampAt(message.timestamp, `${path}.timestamp`),
    type,
    text,
    textCut,
    context: repliesTo,
    phoneNumberId,
  };
}

/** A failed message's first error, as `code title: details` (the title alone when there are no details). */
function errorText(errors: unknown, path: string): string | null {
  const first = optionalArrayAt(errors, path)[0];
  if (first === undefined) return null;
  const error = objectAt(first, `${path}[0]`);
  const code = error.code;
  if (code !== undefined && typeof code !== 'number' && typeof code !== 'string') refuse(`${path}[0].code`, 'must be a number or a string');
  const title = optionalTextAt(error.title, `${path}[0].title`, ERROR_MAX) ?? optionalTextAt(error.message, `${path}[0].message`, ERROR_MAX);
  const data = optionalObjectAt(error.error_data, `${path}[0].error_data`);
  const details = optionalTextAt(data?.details, `${path}[0].error_data.details`, ERROR_MAX);
  const head = [code === undefined ? null : String(code).slice(0, 20), title].filter((p) => p !== null).join(' ');
  return cutToCharacters(details ? `${head}: ${details}` : head || 'no error given', ERROR_MAX);
}

/** A status report, or null for a status this service does not track (Meta adds new ones now and then). */
function readStatus(raw: unknown, path: string, phoneNumberId: string | null): StatusReport | null {
  const report = objectAt(raw, path);
  const status = report.status;
  if (typeof status !== 'string') return refuse(`${path}.status`, 'must be a string');
  if (!STATUSES.has(status)) return null;
  return {
    id: idAt(report.id, `${path}.id`),
    status: status as WhatsAppStatus,
    recipient: idAt(report.recipient_id, `${path}.recipient_id`),
    timestamp: timestampAt(report.timestamp, `${path}.timestamp`),
    error: errorText(report.errors, `${path}.errors`),
    phoneNumberId,
  };
}

/** The names the change's contacts give, by WhatsApp id. */
function contactNames(raw: unknown, path: string): Map<string, string> {
  const names = new Map<string, string>();
  const contacts = optionalArrayAt(raw, path);
  for (let i = 0; i < Math.min(contacts.length, WHATSAPP_ITEMS_READ); i++) {
    const contact = objectAt(contacts[i], `${path}[${i}]`);
    const waId = optionalIdAt(contact.wa_id, `${path}[${i}].wa_id`);
    const profile = optionalObjectAt(contact.profile, `${path}[${i}].profile`);
    const name = optionalTextAt(profile?.name, `${path}[${i}].profile.name`, NAME_MAX);
    if (waId !== null && name !== null) names.set(waId, name);
  }
  return names;
}

/** One `messages` change's value: its number, its contacts' names, its messages and statuses. */
function readValue(raw: unknown, path: string, into: Collected): void {
  const value = objectAt(raw, path);
  const metadata = optionalObjectAt(value.metadata, `${path}.metadata`);
  const phoneNumberId = optionalIdAt(metadata?.phone_number_id, `${path}.metadata.phone_number_id`);
  into.phoneNumberId ??= phoneNumberId;
  const names = contactNames(value.contacts, `${path}.contacts`);
  const messages = optionalArrayAt(value.messages, `${path}.messages`);
  const messagesRead = Math.min(messages.length, WHATSAPP_ITEMS_READ - into.messages.length);
  for (let i = 0; i < messagesRead; i++) into.messages.push(readMessage(messages[i], `${path}.messages[${i}]`, names, phoneNumberId));
  into.messagesNotRead += messages.length - messagesRead;
  const statuses = optionalArrayAt(value.statuses, `${path}.statuses`);
  // Room is counted in reports read, the untracked statuses (left out) included.
  const statusesRead = Math.min(statuses.length, WHATSAPP_ITEMS_READ - into.statusesSeen);
  for (let i = 0; i < statusesRead; i++) {
    const report = readStatus(statuses[i], `${path}.statuses[${i}]`, phoneNumberId);
    if (report) into.statuses.push(report);
  }
  into.statusesSeen += statusesRead;
  into.statusesNotRead += statuses.length - statusesRead;
}

/** The messages and status reports of a delivery's raw body (already verified as Meta's), or why it is not one. */
export function readWhatsAppDelivery(body: Buffer): WhatsAppDelivery {
  if (body.length > WHATSAPP_DELIVERY_MAX_BYTES) return { ok: false, reason: `body: at most ${WHATSAPP_DELIVERY_MAX_BYTES} bytes` };
  const parsed = parseJsonWithin(body.toString('utf8'));
  if (parsed === NOT_JSON) return { ok: false, reason: 'body: must be JSON (nested at most 64 deep)' };
  const into: Collected = { phoneNumberId: null, messages: [], statuses: [], messagesNotRead: 0, statusesNotRead: 0, statusesSeen: 0 };
  try {
    const root = objectAt(parsed, 'body');
    if (root.object !== 'whatsapp_business_account') return { ok: false, reason: 'object: must be whatsapp_business_account' };
    if (!Array.isArray(root.entry)) return { ok: false, reason: 'entry: must be an array' };
    for (const [i, e] of root.entry.entries()) {
      const changes = optionalArrayAt(objectAt(e, `entry[${i}]`).changes, `entry[${i}].changes`);
      for (const [j, c] of changes.entries()) {
        const change = objectAt(c, `entry[${i}].changes[${j}]`);
        if (change.field === 'messages') readValue(change.value, `entry[${i}].changes[${j}].value`, into);
      }
    }
  } catch (err) {
    if (err instanceof Malformed) return { ok: false, reason: err.message };
    throw err;
  }
  const { phoneNumberId, messages, statuses, messagesNotRead, statusesNotRead } = into;
  return { ok: true, phoneNumberId, messages, statuses, messagesNotRead, statusesNotRead };
}
