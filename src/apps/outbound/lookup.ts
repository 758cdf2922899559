// The address rule of every outbound call the service makes for a tenant (http.request, an MCP
// app's server, an OAuth token endpoint): only global unicast addresses (addresses.ts) unless the
// operator set HTTP_TOOL_ALLOW_PRIVATE. A host name is resolved by our own lookup, which refuses the
// name if any address it resolves to is not global, and the connection is made to an address that
// lookup vetted (so DNS cannot point it elsewhere between the check and the connect).
import dns from 'node:dns';
import net from 'node:net';
import { ToolError } from '../types';
import { isGlobalUnicast } from './addresses';

type LookupAddress = { address: string; family: number };

/** A lookup for node's http(s).request that resolves only to allowed addresses. */
export function vettedLookup(allowPrivate: boolean): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    dns.lookup(hostname, { all: true, family: options.family }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const refused = addresses.find((a) => !allowPrivate && !isGlobalUnicast(a.address));
      if (refused) return callback(new ToolError(`refused: ${hostname} resolves to ${refused.address}, which is not a public (global unicast) address`));
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  }) as unknown as net.LookupFunction;
}

/** Why `url` may not be called (an IP literal is connected to without a lookup: vetted here), or null. */
export function refusedLiteral(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) && !allowPrivate && !isGlobalUnicast(host) ? `refused: ${host} is not a public (global unicast) address` : null;
}
