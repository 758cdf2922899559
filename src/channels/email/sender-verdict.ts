// Who a received mail is from, as the mail's own proofs say (issue 47; docs/channels.md): SPF, DKIM
// and DMARC by mailauth, against the DNS servers a setting names (EMAIL_DNS_SERVERS; a closed
// network, or a test, serves its own records). A sender is authenticated when its From domain
// passes DMARC, or, where the domain publishes no DMARC record, when an aligned DKIM signature or
// an aligned SPF pass vouches for it. Anything else (a DNS failure too) is not authenticated.
import { Resolver } from 'node:dns/promises';

import { getDomain } from 'tldts';

export interface SenderVerdict {
  authenticated: boolean;
  /** What vouched for the sender (`dmarc`, `dkim`, `spf`), or why none did. */
  method: 'dmarc' | 'dkim' | 'spf' | null;
  /** The From header's domain (null when the mail has not exactly one From address). */
  fromDomain: string | null;
  dmarc: string;
  spf: string;
  dkim: string;
}

export interface ReceivedOn {
  /** The connecting client's address, its HELO name, and the envelope's MAIL FROM ('' for a null return path). */
  ip: string;
  helo: string;
  mailFrom: string;
  /** This service's host name, as it writes Authentication-Results. */
  mta: string;
}

// Loaded with the first mail, not at start: it is a quarter of a second of the service's start-up (docs/benchmarks.md, issue 47).
let mailauth: Promise<typeof import('mailauth')> | undefined;
const loadMailauth = () => (mailauth ??= import('mailauth'));

/** The resolver mailauth asks (the system's when no server is named). */
export function mailResolver(servers: readonly string[]): ((name: string, rrtype: string) => Promise<unknown>) | undefined {
  if (!servers.length) return undefined;
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([...servers]);
  return (name, rrtype) => resolver.resolve(name, rrtype as 'TXT');
}

/**
 * The organisational domain relaxed alignment compares (RFC 7489 §3.2): by the public suffix list,
 * as mailauth's own DMARC alignment finds it (tldts, private suffixes included), so `evil.co.uk`
 * and `victim.co.uk` are two organisations. A name the list does not know is its own.
 */
const relaxed = (domain: string) => {
  const lower = domain.toLowerCase();
  return getDomain(lower, { allowPrivateDomains: true }) ?? lower;
};

export async function senderVerdict(raw: Buffer, on: ReceivedOn, resolver: ReturnType<typeof mailResolver>): Promise<SenderVerdict> {
  const { authenticate } = await loadMailauth();
  const result = await authenticate(raw, {
    ip: on.ip,
    helo: on.helo,
    sender: on.mailFrom,
    mta: on.mta,
    disableArc: true,
    disableBimi: true,
    ...(resolver && { resolver: resolver as never }),
  });
  const dmarc = result.dmarc ? result.dmarc.status.result : 'none';
  const fromDomain = result.dmarc ? (result.dmarc.domain ?? null) : null;
  const dkimAligned = result.dkim.results.some((r) => r.status.result === 'pass' && Boolean(r.status.aligned));
  const spf = result.spf ? result.spf.status.result : 'none';
  const spfAligned = Boolean(fromDomain && on.mailFrom && spf === 'pass' && result.spf && relaxed(result.spf.domain) === relaxed(fromDomain));
  const verdict = (authenticated: boolean, method: SenderVerdict['method']): SenderVerdict => ({
    authenticated,
    method,
    fromDomain,
    dmarc,
    spf,
    dkim: result.dkim.results.map((r) => (r.signingDomain ? `${r.signingDomain}=${r.status.result}` : r.status.result)).join(' ') || 'none',
  });
  if (dmarc === 'pass') return verdict(true, 'dmarc');
  // No DMARC record: an aligned DKIM signature or SPF pass is the domain's word. A failing or
  // erroring DMARC is never overridden.
  if (dmarc === 'none' && fromDomain && dkimAligned) return verdict(true, 'dkim');
  if (dmarc === 'none' && spfAligned) return verdict(true, 'spf');
  return verdict(false, null);
}
