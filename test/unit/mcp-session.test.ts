// The MCP client session (apps/mcp/session.ts) against a real server built with the official SDK
// on loopback: tools listed, a call answered, and every bound held: the deadline, the byte cap,
// the outbound address rule, a server that is not there.
import { listTools, McpFailure, serverInfoOf, withMcpSession, type McpEndpoint } from '../../src/apps/mcp/session';
import { startMcpPeer, type McpPeer } from '../helpers/mcp-peer';

let peer: McpPeer;
beforeAll(async () => {
  peer = await startMcpPeer();
});
afterAll(() => peer.close());

const endpoint = (overrides: Partial<McpEndpoint> = {}): McpEndpoint => ({
  url: peer.url,
  headers: {},
  timeoutMs: 3000,
  maxBytes: 256 * 1024,
  allowPrivate: true,
  ...overrides,
});

test('lists the tools and says what the server is', async () => {
  const { tools, info } = await withMcpSession(endpoint(), async (s) => ({ tools: await listTools(s, 500), info: serverInfoOf(s) }));
  expect(tools.map((t) => t.name)).toEqual(['lookup', 'close_ticket', 'comment', 'slow', 'huge', 'fails']);
  expect(tools[0]).toMatchObject({ annotations: { readOnlyHint: true } });
  expect(info).toMatchObject({ name: 'peer-mcp', version: '1.2.3' });
  expect(info.protocol_version).toMatch(/^20\d\d-\d\d-\d\d$/);
});

test('calls a tool', async () => {
  const result = await withMcpSession(endpoint(), (s) => s.client.callTool({ name: 'lookup', arguments: { id: '7' } }, s.request));
  expect(result.content).toEqual([{ type: 'text', text: '{"id":"7","title":"Ticket 7"}' }]);
});

test('a server slower than the deadline fails the session with the deadline, in about that time', async () => {
  const started = performance.now();
  await expect(withMcpSession(endpoint({ timeoutMs: 500 }), (s) => s.client.callTool({ name: 'slow', arguments: { ms: 3000 } }, s.request))).rejects.toThrow(
    new McpFailure('the MCP server did not answer within 500 ms'),
  );
  expect(performance.now() - started).toBeLessThan(1500);
});

test('an answer past the byte cap fails, keeping only the cap', async () => {
  let cut = 0;
  await expect(
    withMcpSession(endpoint({ maxBytes: 64 * 1024 }), async (s) => {
      try {
        return await s.client.callTool({ name: 'huge', arguments: { bytes: 5_000_000 } }, s.request);
      } finally {
        cut = s.cut()?.prefix.length ?? 0;
      }
    }),
  ).rejects.toThrow("the MCP server's answer is larger than 65536 bytes, the most the app reads");
  expect(cut).toBe(64 * 1024);
});

test('a private address is refused unless allowed; a server that is not there fails clearly', async () => {
  await expect(withMcpSession(endpoint({ allowPrivate: false }), (s) => listTools(s, 500))).rejects.toThrow(
    'refused: 127.0.0.1 is not a public (global unicast) address',
  );
  await expect(withMcpSession(endpoint({ url: 'http://localhost:1/mcp', allowPrivate: false }), (s) => listTools(s, 500))).rejects.toThrow(
    /refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public/,
  );
  await expect(withMcpSession(endpoint({ url: 'http://127.0.0.1:1/mcp' }), (s) => listTools(s, 500))).rejects.toThrow(
    /^the MCP server could not be used: .*ECONNREFUSED/,
  );
});

test('more tools than allowed fail the listing', async () => {
  const many = await startMcpPeer({ tools: Array.from({ length: 40 }, (_, i) => ({ name: `t${i}` })) });
  try {
    await expect(withMcpSession(endpoint({ url: many.url }), (s) => listTools(s, 30))).rejects.toThrow(
      'the MCP server lists more than 30 tools, the most an app may have',
    );
  } finally {
    await many.close();
  }
});

test('a later session to a server skips what the first learned of its protocol: fewer requests for the same call', async () => {
  const fresh = await startMcpPeer();
  try {
    const call = () => withMcpSession(endpoint({ url: fresh.url }), (s) => s.client.callTool({ name: 'lookup', arguments: { id: '1' } }, s.request));
    await call();
    const first = fresh.requests;
    await call();
    const second = fresh.requests - first;
    expect(second).toBeLessThan(first);
    // Other credentials are another authorization context: it asks again.
    await withMcpSession(endpoint({ url: fresh.url, headers: { 'x-other': '1' } }), (s) =>
      s.client.callTool({ name: 'lookup', arguments: { id: '1' } }, s.request),
    );
    expect(fresh.requests - first - second).toBe(first);
  } finally {
    await fresh.close();
  }
});

test('a redirect to another origin (a metadata address here) is not followed', async () => {
  const http = await import('node:http');
  const redirecting = http.createServer((_req, res) => res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end());
  await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
  const port = (redirecting.address() as { port: number }).port;
  try {
    const started = performance.now();
    const failure = withMcpSession(endpoint({ url: `http://127.0.0.1:${port}/mcp` }), (s) => listTools(s, 500));
    await expect(failure).rejects.toBeInstanceOf(McpFailure);
    await expect(failure).rejects.toThrow(/redirect/i);
    expect(performance.now() - started).toBeLessThan(2000);
  } finally {
    redirecting.closeAllConnections();
    await new Promise((resolve) => redirecting.close(resolve));
  }
});

test('a server that answers what is not MCP fails the session, saying so', async () => {
  const http = await import('node:http');
  const garbage = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not mcp</html>'));
  await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
  const port = (garbage.address() as { port: number }).port;
  try {
    await expect(withMcpSession(endpoint({ url: `http://127.0.0.1:${port}/mcp` }), (s) => listTools(s, 500))).rejects.toThrow(
      /^the MCP server could not be used: /,
    );
  } finally {
    garbage.closeAllConnections();
    await new Promise((resolve) => garbage.close(resolve));
  }
});
