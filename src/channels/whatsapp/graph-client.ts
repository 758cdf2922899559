// Sends a text message through WhatsApp's Cloud API (Graph: POST /{version}/{phone-number-id}/messages)
// and says what became of it in the terms a sender decides on: sent (with its wamid), worth
// retrying (Graph busy or rate-limited, the network, a timeout), or final, with the 24-hour
// customer-service window's refusal (error 131047) told apart, since only the customer can reopen it.
// Bounded: the text (refused here above WhatsApp's 4096 characters, so that a caller never pays a
// call to learn it), the wait (timeoutMs, the answer's body included) and the answer read (64 KiB).
// The access token goes in the Authorization header only; every error text is scrubbed of it.
import { NOT_JSON, parseJsonWithin } from '../../domain/json-limits';
import { cutToCharacters, longerThan } from './text-bounds';
import { WINDOW_RULE } from './window';

/** WhatsApp's limit on a text message's body, in characters: a longer text is refused before sending. */
export const WHATSAPP_TEXT_MAX = 4096;
/** The most of Graph's answer read; its real answers are well under 1 KiB. */
export const GRAPH_ANSWER_MAX_BYTES = 64 * 1024;
/** Graph's error code for a free-form message outside the customer-service window. */
export const WINDOW_CLOSED_CODE = 131047;
/**
 * Graph error codes worth retrying later: 130429 (throughput rate limit), 131056 (too many messages
 * to one customer), 131000 (something went wrong), 131016 (service unavailable).
 */
const RETRIED_CODES: ReadonlySet<number> = new Set([130429, 131056, 131000, 131016]);
/** Graph's error (code, message, details) is cut to this in an error text. */
const GRAPH_ERROR_MAX = 300;

export interface WhatsAppTextSend {
  /** `https://graph.facebook.com` (a test gives its own server). */
  graphBaseUrl: string;
  /** Graph's API version, `v23.0`. */
  version: string;
  /** The business number's id (digits), as Meta's dashboard shows it. */
  phoneNumberId: string;
  accessToken: string;
  /** The customer's WhatsApp id (or phone number). */
  to: string;
  text: string;
  /** The wamid this replies to (shown quoted above the reply), or null. */
  replyTo: string | null;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export type GraphSendResult = { ok: true; messageId: string } | { ok: false; retry: boolean; windowClosed: boolean; error: string };

const final = (error: string): GraphSendResult => ({ ok: false, retry: false, windowClosed: false, error });
const retryLater = (error: string): GraphSendResult => ({ ok: false, retry: true, windowClosed: false, error });

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Only visible ASCII: a header value that fetch would refuse (quoting it in its error) is refused here first. */
const visibleAscii = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
};

/** The messages endpoint, or why the options cannot name one. */
function endpointOf(opts: WhatsAppTextSend): URL | string {
  let base: URL;
  try {
    base = new URL(opts.graphBaseUrl);
  } catch {
    return 'graphBaseUrl: must be an absolute URL';
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') return 'graphBaseUrl: must be http or https';
  if (!/^v\d{1,3}\.\d{1,3}$/.test(opts.version)) return 'version: must be a Graph API version such as v23.0';
  if (!/^\d{1,64}$/.test(opts.phoneNumberId)) return "phoneNumberId: must be the number's id (digits)";
  let path = base.pathname;
  while (path.endsWith('/')) path = path.slice(0, -1);
  return new URL(`${path}/${opts.version}/${opts.phoneNumberId}/messages`, base.origin);
}

/** Why the message must not be sent as given, or null. */
function refusalOf(opts: WhatsAppTextSend): string | null {
  if (opts.text.length === 0) return 'text: must not be empty (WhatsApp refuses an empty message)';
  if (longerThan(opts.text, WHATSAPP_TEXT_MAX)) return `text: at most ${WHATSAPP_TEXT_MAX} characters (WhatsApp's limit on a text message)`;
  if (opts.to.length === 0 || opts.to.length > 64) return "to: must be the customer's WhatsApp id (1 to 64 characters)";
  if (opts.replyTo !== null && (opts.replyTo.length === 0 || opts.replyTo.length > 256)) return 'replyTo: must be a wamid (1 to 256 characters) or null';
  if (opts.accessToken.length === 0 || opts.accessToken.length > 4096 || !visibleAscii(opts.accessToken))
    return 'accessToken: must be 1 to 4096 visible ASCII characters';
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) return 'timeoutMs: must be a positive number';
  return null;
}

/** At most `max` bytes of the answer's body; `over` when there was more (the rest is not read). */
async function readAtMost(response: Response, max: number): Promise<{ text: string; over: boolean }> {
  if (!response.body) return { text: '', over: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  // A declared length over the bound is not read at all.
  let size = Number(response.headers.get('content-length')) > max ? max + 1 : 0;
  while (size <= max) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), over: false };
    size += value.byteLength;
    chunks.push(value);
  }
  // Cancelling closes the connection: the rest is never received.
  reader.cancel().catch(() => {});
  return { text: '', over: true };
}

/** Graph's `{error:{code,message,error_data:{details},is_transient}}`, when the answer is one. */
function graphErrorOf(text: string): { code: number | null; said: string; transient: boolean } {
  const parsed = text ? parseJsonWithin(text) : NOT_JSON;
  const error = parsed !== NOT_JSON && isObject(parsed) && isObject(parsed.error) ? parsed.error : null;
  if (!error) return { code: null, said: cutToCharacters(text.trim(), GRAPH_ERROR_MAX) || 'no error body', transient: false };
  const code = typeof error.code === 'number' ? error.code : null;
  const message = typeof error.message === 'string' ? error.message : '';
  const details = isObject(error.error_data) && typeof error.error_data.details === 'string' ? error.error_data.details : '';
  const said = [code === null ? '' : `error ${code}`, message, details].filter(Boolean).join(': ');
  return { code, said: cutToCharacters(said || 'an error without a message', GRAPH_ERROR_MAX), transient: error.is_transient === true };
}

/** The wamid of a 2xx answer's `messages[0].id`, or null. */
function messageIdOf(text: string): string | null {
  const parsed = parseJsonWithin(text);
  if (parsed === NOT_JSON || !isObject(parsed) || !Array.isArray(parsed.messages)) return null;
  const first: unknown = parsed.messages[0];
  const id = isObject(first) ? first.id : undefined;
  return typeof id === 'string' && id.length > 0 && id.length <= 256 ? id : null;
}

/** What Graph's answer means for the message. */
function classify(status: number, answer: { text: string; over: boolean }): GraphSendResult {
  if (status >= 200 && status < 300) {
    // The message was most likely sent: retrying would send it twice, so these are final.
    if (answer.over) return final(`Graph answered ${status} with more than ${GRAPH_ANSWER_MAX_BYTES} bytes; the message may have been sent`);
    const messageId = messageIdOf(answer.text);
    return messageId ? { ok: true, messageId } : final(`Graph answered ${status} without messages[0].id; the message may have been sent`);
  }
  if (status >= 300 && status < 400) return final(`Graph answered a redirect (${status}), which is not followed`);
  const error = answer.over ? { code: null, said: `an answer over ${GRAPH_ANSWER_MAX_BYTES} bytes`, transient: false } : graphErrorOf(answer.text);
  if (error.code === WINDOW_CLOSED_CODE)
    return { ok: false, retry: false, windowClosed: true, error: `the 24-hour customer-service window is closed (${error.said}): ${WINDOW_RULE}` };
  const retry = status >= 500 || status === 429 || (error.code !== null && RETRIED_CODES.has(error.code)) || error.transient;
  const text = `Graph answered ${status}: ${error.said}`;
  return retry ? retryLater(text) : final(text);
}

/** Why the call failed before an answer: the timeout, or the network (its code, such as ECONNREFUSED). */
function failureOf(err: unknown, timeoutMs: number, status: number | null): GraphSendResult {
  // Read by shape, not instanceof: fetch's errors may come from another realm (a test's VM context).
  const fields = isObject(err) ? err : {};
  const timedOut = fields.name === 'TimeoutError' || fields.name === 'AbortError';
  const cause = isObject(fields.cause) && typeof fields.cause.code === 'string' ? ` (${fields.cause.code})` : '';
  const message = typeof fields.message === 'string' ? cutToCharacters(fields.message, GRAPH_ERROR_MAX) : 'unknown error';
  const what = timedOut ? `Graph did not answer within ${timeoutMs} ms` : `Graph could not be reached: ${message}${cause}`;
  // A 2xx whose body never came: the message was most likely sent, and a retry would send it twice.
  if (status !== null && status >= 200 && status < 300) return final(`${what} (after status ${status}); the message may have been sent`);
  return retryLater(what);
}

const scrubbed = (result: GraphSendResult, token: string): GraphSendResult =>
  result.ok ? result : { ...result, error: result.error.replaceAll(token, '[access token]') };

/** Sends `text` to `to` from the business number; never throws. */
export async function sendWhatsAppText(opts: WhatsAppTextSend): Promise<GraphSendResult> {
  const refusal = refusalOf(opts);
  if (refusal) return final(refusal);
  const endpoint = endpointOf(opts);
  if (typeof endpoint === 'string') return final(endpoint);
  const message = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: opts.to,
    type: 'text',
    text: { preview_url: false, body: opts.text },
    ...(opts.replyTo === null ? {} : { context: { message_id: opts.replyTo } }),
  };
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let status: number | null = null;
  try {
    const response = await (opts.fetch ?? fetch)(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${opts.accessToken}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(message),
      redirect: 'manual',
      signal,
    });
    status = response.status;
    return scrubbed(classify(response.status, await readAtMost(response, GRAPH_ANSWER_MAX_BYTES)), opts.accessToken);
  } catch (err) {
    return scrubbed(failureOf(err, opts.timeoutMs, status), opts.accessToken);
  }
}
