// A real MCP server on loopback, built with the official server SDK (as a team's own server would
// be), for the tests of MCP apps: tools read-only, destructive and unannotated, one that sleeps,
// one whose output is as large as asked, tools added while it runs, a list as long as asked, and
// the bearer token it wants (401 without it). Every call it receives is recorded.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';

export interface PeerTool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; title?: string };
  /** What a call answers (its arguments given); a thrown error is an isError result. */
  run?: (args: Record<string, unknown>, signal: AbortSignal) => Promise<unknown> | unknown;
}

export interface McpPeer {
  url: string;
  /** Each tools/call received: its tool, arguments and Authorization header. */
  calls: { tool: string; args: Record<string, unknown>; authorization: string | undefined }[];
  /** Requests received by method (tools/list, tools/call). */
  methods: string[];
  /** HTTP requests received, of any kind. */
  requests: number;
  tools: PeerTool[];
  /** The bearer token it requires (null: none). */
  requireToken: string | null;
  close(): Promise<void>;
}

const text = (value: unknown) => ({ content: [{ type: 'text' as const, text: typeof value === 'string' ? value : JSON.stringify(value) }] });

/** The tools every peer starts with. */
export function standardTools(): PeerTool[] {
  return [
    {
      name: 'lookup',
      description: 'Looks a ticket up.',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      annotations: { readOnlyHint: true, title: 'Look up' },
      run: (args) => text({ id: args.id, title: `Ticket ${args.id}` }),
    },
    {
      name: 'close_ticket',
      description: 'Closes a ticket.',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      annotations: { readOnlyHint: false, destructiveHint: true },
      run: (args) => text(`closed ${args.id}`),
    },
    {
      name: 'comment',
      description: 'Adds a comment (no annotations).',
      inputSchema: { type: 'object', properties: { id: { type: 'string' }, body: { type: 'string' } }, required: ['id', 'body'] },
      run: (args) => ({ content: [{ type: 'text', text: 'ok' }], structuredContent: { id: args.id, commented: true } }),
    },
    {
      name: 'slow',
      description: 'Sleeps ms milliseconds.',
      inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
      annotations: { readOnlyHint: true },
      run: async (args, signal) => {
        // Ends early when the caller goes away (a call past its deadline leaves no timer behind).
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Number(args.ms ?? 0));
          signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return text('awake');
      },
    },
    {
      name: 'huge',
      description: 'Answers bytes characters of text.',
      inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } },
      annotations: { readOnlyHint: true },
      run: (args) => text('x'.repeat(Number(args.bytes ?? 0))),
    },
    {
      name: 'fails',
      description: 'Always fails.',
      annotations: { readOnlyHint: true },
      run: () => {
        throw new Error('the ticket system is down');
      },
    },
  ];
}

export async function startMcpPeer(opts: { tools?: PeerTool[]; requireToken?: string | null; name?: string } = {}): Promise<McpPeer> {
  const peer: Omit<McpPeer, 'url' | 'close'> = {
    calls: [],
    methods: [],
    requests: 0,
    tools: opts.tools ?? standardTools(),
    requireToken: opts.requireToken ?? null,
  };
  let authorization: string | undefined;
  const serverFor = () => {
    const server = new Server({ name: opts.name ?? 'peer-mcp', version: '1.2.3' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', async () => {
      peer.methods.push('tools/list');
      // As the peer lists them, whatever they say (a hostile server's list too).
      return {
        tools: peer.tools.map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchema ?? { type: 'object' },
          ...(t.annotations ? { annotations: t.annotations } : {}),
        })),
      } as never;
    });
    server.setRequestHandler('tools/call', async (request, ctx) => {
      peer.methods.push('tools/call');
      const tool = peer.tools.find((t) => t.name === request.params.name);
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      peer.calls.push({ tool: request.params.name, args, authorization });
      if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no tool '${request.params.name}'`);
      try {
        return ((await tool.run?.(args, ctx.mcpReq.signal)) ?? text('done')) as never;
      } catch (err) {
        return { isError: true, content: [{ type: 'text' as const, text: (err as Error).message }] };
      }
    });
    return server;
  };
  const mcp = createMcpHandler(serverFor, { legacy: 'stateless' });
  const node = toNodeHandler(mcp);
  const server = http.createServer((req, res) => {
    peer.requests++;
    authorization = req.headers.authorization;
    if (peer.requireToken !== null && req.headers.authorization !== `Bearer ${peer.requireToken}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"unauthorized"}');
      return;
    }
    void node(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(peer, {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await mcp.close();
    },
  }) as McpPeer;
}
