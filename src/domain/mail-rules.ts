// What decides, before any run, whether a received mail may start one (issue 47; docs/channels.md):
// the loop rules (auto-replies, lists, bulk mail, null return paths, our own mail) and the agent's
// `allowed_senders`. Pure and linear in the text: no pattern over a sender's address backtracks.

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
