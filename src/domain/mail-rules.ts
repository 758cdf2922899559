// What decides, before any run, whether a received mail may start one (issue 47; docs/channels.md):
// the loop rules (auto-replies, lists, bulk mail, null return paths, our own mail) and the agent's
// `allowed_senders`. Pure and linear in the text: no pattern over a sender's address backtracks.
import { createHash } from 'node:crypto';

/** The headers the loop rules read, lower-cased names, first value of each. */
export interface LoopHeaders {
  autoSubmitted?: string;
  listId?: string;
  precedence?: string;
}

/** Why a received mail starts nothing, or null when the loop rules let it through. */
export function loopReason(mail: { returnPath: string; from: string; headers: LoopHeaders }, own: { addresses: ReadonlySet<string> }): string | null {
  const autoSubmitted = (mail.headers.autoSubmitted ?? '').split(';')[0]!.trim().toLowerCase();
  if (autoSubmitted && autoSubmitted !== 'no') return `Auto-Submitted: ${autoSubmitted} (an automatic message; RFC 3834)`;
  if (mail.returnPath === '') return 'a null return path (a bounce or another automatic message)';
  if (mail.headers.listId) return 'List-Id (a mailing list)';
  const precedence = (mail.headers.precedence ?? '').trim().toLowerCase();
  if (precedence === 'bulk' || precedence === 'list' || precedence === 'junk') return `Precedence: ${precedence}`;
  if (own.addresses.has(mail.from.toLowerCase())) return "from an agent's own address";
  return null;
}

/** Characters that make a string more than one plain address to a mailer (lists, groups, display names, comments, quoting). */
const NOT_IN_A_BARE_ADDRESS = new Set([',', ';', ':', '<', '>', '(', ')', '[', ']', '"', '\\']);

/**
 * Whether `text` is one plain address, `local@domain`: one `@`, both parts non-empty, no space or
 * control character and nothing a mailer reads as a list, a group or a display name. A recipient
 * given to a mailer must be this, or `a@evil.test,b@allowed.test` would pass a check of its last domain.
 */
export function isBareAddress(text: string): boolean {
  if (text.length > 320) return false;
  const at = text.indexOf('@');
  if (at <= 0 || at === text.length - 1 || text.indexOf('@', at + 1) >= 0) return false;
  for (const char of text) if (char <= ' ' || char === '\u007f' || NOT_IN_A_BARE_ADDRESS.has(char)) return false;
  return true;
}

/**
 * Whether `address` matches one of `patterns`: `user@domain` (that address), `@domain` (any
 * address of the domain), `@*.domain` (any address of a subdomain, not of the domain itself).
 * Case-insensitive. An empty list matches no one: an agent answers only senders it names.
 */
export function senderAllowed(address: string, patterns: readonly string[]): boolean {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return false;
  const lower = address.toLowerCase();
  const domain = lower.slice(at + 1);
  return patterns.some((raw) => {
    const pattern = raw.toLowerCase();
    if (pattern.startsWith('@*.')) return domain.endsWith(`.${pattern.slice(3)}`) && domain.length > pattern.length - 2;
    if (pattern.startsWith('@')) return domain === pattern.slice(1);
    return lower === pattern;
  });
}

/** The characters of a workspace's mail tag (RFC 4648's base32 alphabet, lower case: safe in any local part). */
const TAG_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** A tag's length: 50 bits of the workspace id's SHA-256, so two workspaces' agents of one slug never share an address in practice (a clash is refused at write: the address is unique in the store). */
const TAG_LENGTH = 10;

/** The workspace's mail tag: the part of its agents' addresses that tells workspaces apart. `sha256` is the digest of the workspace id. */
function workspaceMailTag(sha256: Uint8Array): string {
  let tag = '';
  let bits = 0;
  let value = 0;
  for (const byte of sha256) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && tag.length < TAG_LENGTH) {
      tag += TAG_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (tag.length === TAG_LENGTH) break;
  }
  return tag;
}

/** The longest slug an address carries: a local part is at most 64 characters (RFC 5321), the tag and its dot take 11. */
const MAILBOX_SLUG_CHARS = 53;

/**
 * An agent's mailbox, the local part of its address: `<slug>.<workspace tag>` (lower case, the slug
 * cut to 53 characters; two agents whose slugs agree that far cannot both have email: the store
 * keeps a mailbox unique).
 */
export const agentMailbox = (workspaceId: string, slug: string) =>
  `${slug.slice(0, MAILBOX_SLUG_CHARS)}.${workspaceMailTag(createHash('sha256').update(workspaceId).digest())}`.toLowerCase();
