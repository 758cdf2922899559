// The http tool against loopback servers (HTTP_TOOL_ALLOW_PRIVATE's path): the deadline covers the
// whole exchange, the size cap too, and every redirect hop is vetted like the first.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpRequest, nextHop, type Hop } from '../../src/apps/builtin/http';
import { ToolError } from '../../src/apps/types';

const servers: http.Server[] = [];
function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}
afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

const options = { allowPrivate: true, timeoutMs: 1000, maxBytes: 1024 * 1024 };

test('a server that drips one byte at a time cannot hold the call past its total deadline', async () => {
  const url = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const drip = setInterval(() => res.write('x'), 100); // never idle for long: an idle timeout would never fire
    res.on('close', () => clearInterval(drip));
  });
  const started = Date.now();
  await expect(httpRequest({ method: 'GET', url }, options)).rejects.toThrow(new ToolError('no complete response within 1000 ms'));
  expect(Date.now() - started).toBeLessThan(1900);
});

test('a server that never answers is cut at the deadline too', async () => {
  const url = await listen(() => undefined);
  await expect(httpRequest({ method: 'GET', url }, { ...options, timeoutMs: 300 })).rejects.toThrow('no complete response within 300 ms');
});

test('the size cap covers the whole exchange: headers, and bodies summed over redirect hops', async () => {
  const chunk = 'y'.repeat(400 * 1024);
  const url = await listen((req, res) => {
    const n = Number(req.url!.slice(1) || '0');
    if (n < 3)
      res.writeHead(302, { location: `/${n + 1}` }).end(chunk); // 400 KiB per hop: under the cap alone, over it summed
    else res.end('done');
  });
  await expect(httpRequest({ method: 'GET', url: `${url}/0` }, options)).rejects.toThrow(`the exchange is over ${1024 * 1024} bytes`);
  await expect(httpRequest({ method: 'GET', url: `${url}/1` }, options)).resolves.toMatchObject({ status: 200, body: 'done' });
  const bigHeaders = await listen((_req, res) => res.writeHead(200, { 'x-big': 'z'.repeat(8000) }).end('ok'));
  await expect(httpRequest({ method: 'GET', url: bigHeaders }, { ...options, maxBytes: 4000 })).rejects.toThrow('the exchange is over 4000 bytes');
  await expect(httpRequest({ method: 'POST', url, body: 'b'.repeat(2000) }, { ...options, maxBytes: 1000 })).rejects.toThrow(
    'body: the request body is 2000 bytes',
  );
});

test('redirects are followed (at most 5), 303 becomes a GET, credentials stay with their origin', async () => {
  const seen: { path: string; method: string; auth?: string }[] = [];
  const other = await listen((req, res) => {
    seen.push({ path: `other${req.url}`, method: req.method!, auth: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end('{"landed":true}');
  });
  const url = await listen((req, res) => {
    seen.push({ path: req.url!, method: req.method!, auth: req.headers.authorization });
    if (req.url === '/see-other') return void res.writeHead(303, { location: '/target' }).end();
    if (req.url === '/away') return void res.writeHead(307, { location: `${other}/there` }).end();
    if (req.url!.startsWith('/loop')) return void res.writeHead(302, { location: `/loop${Number(req.url!.slice(5) || 0) + 1}` }).end();
    res.end('target');
  });
  await expect(httpRequest({ method: 'POST', url: `${url}/see-other`, body: { a: 1 } }, options)).resolves.toMatchObject({ status: 200, body: 'target' });
  expect(seen.splice(0)).toEqual([
    { path: '/see-other', method: 'POST' },
    { path: '/target', method: 'GET' },
  ]);
  await expect(httpRequest({ method: 'GET', url: `${url}/away`, headers: { Authorization: 'Bearer s3cret' } }, options)).resolves.toMatchObject({
    body: { landed: true },
  });
  expect(seen.splice(0)).toEqual([
    { path: '/away', method: 'GET', auth: 'Bearer s3cret' },
    { path: 'other/there', method: 'GET' },
  ]);
  const looped = await httpRequest({ method: 'GET', url: `${url}/loop` }, options);
  expect(looped).toMatchObject({ status: 302, headers: { location: '/loop6' } });
});

test('every redirect hop is vetted: a public server cannot bounce the call to a private or special address', () => {
  const hop: Hop = { url: new URL('https://93.184.216.34/start'), method: 'GET', headers: {}, payload: undefined };
  for (const location of [
    'http://127.0.0.1/admin',
    'http://[::ffff:7f00:1]/',
    'http://169.254.169.254/latest/meta-data',
    'http://[2002:7f00:1::1]/',
    'http://[::127.0.0.1]/',
    'http://192.88.99.1/',
  ]) {
    expect(() => nextHop(hop, 302, location, false)).toThrow(/^refused: /);
  }
  expect(nextHop(hop, 302, '/next', false)!.url.href).toBe('https://93.184.216.34/next');
  expect(() => nextHop(hop, 302, 'file:///etc/passwd', false)).toThrow('only http and https');
});

test('a host name is refused when any address it resolves to is not global', async () => {
  await expect(httpRequest({ method: 'GET', url: 'http://localhost:9/' }, { ...options, allowPrivate: false })).rejects.toThrow(
    /^refused: localhost resolves to/,
  );
});
