// The channels' settings (docs/channels.md): the agents' mail domain, the SMTP listener's bounds,
// the DNS servers mail is authenticated with, the relay, and the Graph API.
import { ConfigError, httpUrl, integer, nonEmpty, type Env } from './config-values';

/** The channels' settings (docs/channels.md). The relay URL carries credentials: it is never echoed or logged. */
export interface ChannelConfig {
  /** The domain of the agents' addresses (EMAIL_DOMAIN), lower case. */
  emailDomain: string;
  /** The SMTP listener's port on `host` (SMTP_PORT); 0: no listener. */
  smtpPort: number;
  /** Whether SMTP_PORT was set: a port set that cannot be listened on stops the start; the default one, taken, leaves the listener off. */
  smtpPortSet: boolean;
  /** A message's bytes, at most, over SMTP or forwarded over HTTP (SMTP_MAX_BYTES). */
  maxBytes: number;
  /** Recipients of one message, at most (SMTP_MAX_RECIPIENTS). */
  maxRecipients: number;
  /** SMTP connections at once, at most (SMTP_MAX_CLIENTS). */
  maxClients: number;
  /** The DNS servers SPF, DKIM and DMARC are checked with (EMAIL_DNS_SERVERS, `host[:port]`, comma-separated); empty: the system's. */
  dnsServers: string[];
  /** Where mail leaves (SMTP_RELAY_URL, smtp:// or smtps://, with credentials); null: mail stays unsent. */
  relayUrl: string | null;
  /** Runs one sender may start of one agent per hour (CHANNEL_SENDER_RUNS_PER_HOUR). */
  senderRunsPerHour: number;
  /** The first retry's delay of a failed send; each next one doubles it (CHANNEL_RETRY_BASE_SECONDS). */
  retryBaseMs: number;
  /** The WhatsApp Business Cloud API (WHATSAPP_GRAPH_URL, WHATSAPP_GRAPH_VERSION). */
  graphBaseUrl: string;
  graphVersion: string;
}

const HOST_PORT = /^(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253})(:\d{1,5})?$/;

export function channelConfig(env: Env): ChannelConfig {
  const dnsServers = (env.EMAIL_DNS_SERVERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = dnsServers.find((s) => !HOST_PORT.test(s));
  if (bad) throw new ConfigError(`EMAIL_DNS_SERVERS: '${bad}' is not an address with an optional port (127.0.0.1:5353, [::1]:53)`);
  const relayUrl = env.SMTP_RELAY_URL || null;
  if (relayUrl !== null && !/^smtps?:\/\/[^\s]+$/.test(relayUrl)) {
    throw new ConfigError(
      'SMTP_RELAY_URL: must be an smtp:// or smtps:// URL (smtp://user:password@host:587); it is not shown here, as it may carry a password',
    );
  }
  return {
    emailDomain: nonEmpty(
      env,
      'EMAIL_DOMAIN',
      'agents.localhost',
      /^[A-Za-z0-9]([A-Za-z0-9-]{0,62}\.)*[A-Za-z0-9-]{1,63}$/,
      'must be a domain name',
    ).toLowerCase(),
    smtpPort: integer(env, 'SMTP_PORT', 2525, 0, 65_535),
    smtpPortSet: Boolean(env.SMTP_PORT),
    maxBytes: integer(env, 'SMTP_MAX_BYTES', 10 * 1024 * 1024, 1024, 50 * 1024 * 1024),
    maxRecipients: integer(env, 'SMTP_MAX_RECIPIENTS', 10, 1, 100),
    maxClients: integer(env, 'SMTP_MAX_CLIENTS', 20, 1, 1000),
    dnsServers,
    relayUrl,
    senderRunsPerHour: integer(env, 'CHANNEL_SENDER_RUNS_PER_HOUR', 20, 1, 10_000),
    retryBaseMs: integer(env, 'CHANNEL_RETRY_BASE_SECONDS', 30, 1, 3600) * 1000,
    graphBaseUrl: httpUrl(env, 'WHATSAPP_GRAPH_URL', 'https://graph.facebook.com') as string,
    graphVersion: nonEmpty(env, 'WHATSAPP_GRAPH_VERSION', 'v23.0', /^v\d{1,3}\.\d{1,3}$/, 'must be a Graph API version such as v23.0'),
  };
}
