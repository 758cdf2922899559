// The http app. Requests go only to public addresses: the host name is resolved by our own lookup,
// which refuses private, loopback, link-local and other special-purpose addresses, and the
// connection is made to the address that lookup vetted (so DNS cannot point it elsewhere between
// the check and the connect). Responses are capped in size and time; redirects are not followed.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { ToolError, type HttpToolOptions, type ToolImplementation } from './types';

const blocked = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(address, prefix, 'ipv4');
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are checked against the IPv4 rules by BlockList itself.
for (const [address, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(address, prefix, 'ipv6');

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  return !blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

type LookupAddress = { address: string; family: number };

function vettedLookup(allowPrivate: boolean): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    dns.lookup(hostname, { all: true, family: options.family }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const refused = addresses.find((a) => !allowPrivate && !isPublicAddress(a.address));
      if (refused) return callback(new ToolError(`refused: ${hostname} resolves to ${refused.address}, a private or reserved address`));
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  }) as unknown as net.LookupFunction;
}

interface RequestArgs {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export function httpRequest(args: RequestArgs, options: HttpToolOptions): Promise<{ status: number; headers: Record<string, string>; body: unknown }> {
  let url: URL;
  try {
    url = new URL(args.url);
  } catch {
    throw new ToolError(`url: '${args.url}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError(`url: only http and https are allowed, not ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !options.allowPrivate && !isPublicAddress(host)) {
    throw new ToolError(`refused: ${host} is a private or reserved address`);
  }
  const headers: Record<string, string> = { ...(args.headers ?? {}) };
  let payload: Buffer | undefined;
  if (args.body !== undefined && args.body !== null) {
    payload = Buffer.from(typeof args.body === 'string' ? args.body : JSON.stringify(args.body));
    if (typeof args.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method: args.method, headers, lookup: vettedLookup(options.allowPrivate), timeout: options.timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxResponseBytes) {
          req.destroy(new ToolError(`the response is over ${options.maxResponseBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const type = String(res.headers['content-type'] ?? '');
        let body: unknown = text;
        if (/\bjson\b/i.test(type) && text) {
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON after all: keep the text
          }
        }
        const responseHeaders = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new ToolError(`no response within ${options.timeoutMs} ms`)));
    req.on('error', (err) => reject(err instanceof ToolError ? err : new ToolError(`request failed: ${err.message}`)));
    req.end(payload);
  });
}

export const httpTools: Record<string, ToolImplementation> = {
  'http.request': async (args, ctx) => httpRequest(args as unknown as RequestArgs, ctx.http),
};
