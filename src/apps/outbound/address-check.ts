// The address rule (lookup.ts) applied when a URL is written, before anything is sent to it: the
// scheme, no credentials in it, and every address its host resolves to now. The rule is applied
// again at every connection (vettedLookup), so a name that resolves elsewhere later is refused then.
import dns from 'node:dns';
import net from 'node:net';
import { isGlobalUnicast } from './addresses';

/** How long the write-time resolution may take: a name that does not answer by then is refused. */
const RESOLVE_MS = 5000;

/** Why `raw` may not receive the service's requests (naming the rule), or null. */
export async function addressRefusal(raw: string, allowPrivate: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL (https://host/path)';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return `must be an https URL, not ${url.protocol.slice(0, -1)}${allowPrivate ? ' (http is allowed too here)' : ''}`;
  }
  if (url.username || url.password) return 'must not carry a user name or password';
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (net.isIP(host)) return allowPrivate || isGlobalUnicast(host) ? null : `${host} is not a public (global unicast) address`;
  let addresses: dns.LookupAddress[];
  try {
    addresses = await Promise.race([
      dns.promises.lookup(host, { all: true }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), RESOLVE_MS).unref()),
    ]);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return `its host ${host} does not resolve (${why})`;
  }
  const refused = addresses.find((a) => !allowPrivate && !isGlobalUnicast(a.address));
  return refused ? `its host ${host} resolves to ${refused.address}, which is not a public (global unicast) address` : null;
}
