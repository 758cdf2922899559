#!/usr/bin/env node
// What an MCP app's tool call costs the service (issue 44's target: at most 2 ms of CPU more than
// the same call made directly with the SDK). The MCP server (built with the official server SDK)
// runs in a child process, so its CPU is not counted; this process measures its own CPU per call:
//  - direct: one connected SDK client calling the tool again and again (the cheapest a client can be);
//  - service: the call as a run makes it (apps/mcp/app-module.ts: a session per call, through the
//    guarded fetch, its answer turned into the tool's output), through the app registry's invoke.
//
//   npm run build && node scripts/bench-mcp.js [--calls N]
'use strict';
const { fork } = require('node:child_process');
const path = require('node:path');
const { parseArgs } = require('node:util');

const { values } = parseArgs({ options: { calls: { type: 'string', default: '400' }, peer: { type: 'boolean' } } });

/** The child: an MCP server with one tool that answers at once. */
function runPeer() {
  const http = require('node:http');
  const { createMcpHandler, Server } = require('@modelcontextprotocol/server');
  const { toNodeHandler } = require('@modelcontextprotocol/node');
  const handler = toNodeHandler(
    createMcpHandler(
      () => {
        const server = new Server({ name: 'bench-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
        server.setRequestHandler('tools/list', async () => ({
          tools: [{ name: 'lookup', inputSchema: { type: 'object', properties: { id: { type: 'string' } } }, annotations: { readOnlyHint: true } }],
        }));
        server.setRequestHandler('tools/call', async (req) => ({ content: [{ type: 'text', text: `ticket ${req.params.arguments?.id}` }] }));
        return server;
      },
      { legacy: 'stateless' },
    ),
  );
  const server = http.createServer((req, res) => void handler(req, res)).listen(0, '127.0.0.1', () => process.send(server.address().port));
}

const root = path.join(__dirname, '..');

/** CPU µs per call of `call`, after a warm-up. */
async function cpuPerCall(calls, call) {
  for (let i = 0; i < 50; i++) await call(i);
  const started = process.cpuUsage();
  const wall = performance.now();
  for (let i = 0; i < calls; i++) await call(i);
  const used = process.cpuUsage(started);
  return { cpu: (used.user + used.system) / calls, wall: ((performance.now() - wall) * 1000) / calls };
}

async function main() {
  const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
  const { mcpAppModule } = require(path.join(root, 'dist/src/apps/mcp/app-module'));
  const { DEFAULT_RUN_LIMITS, renderBudget } = require(path.join(root, 'dist/src/runtime/limits'));
  const { invokeTool } = require(path.join(root, 'dist/src/apps/invoke'));
  const calls = Number(values.calls);
  const peer = fork(__filename, ['--peer'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise((resolve) => peer.once('message', resolve));
  const url = `http://127.0.0.1:${port}/mcp`;
  try {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const direct = await cpuPerCall(calls, (i) => client.callTool({ name: 'lookup', arguments: { id: String(i) } }));
    await client.close();

    const settings = {
      kind: 'service.app/v1',
      slug: 'bench',
      name: 'Bench',
      description: null,
      mcp: { url, auth: 'none', timeout_ms: 10_000, output_bytes: 262_144, trust_annotations: true },
    };
    const tool = {
      slug: 'bench.lookup',
      name: 'lookup',
      description: '',
      read_only: true,
      destructive: false,
      args_schema: { type: 'object', properties: { id: { type: 'string' } } },
    };
    const app = mcpAppModule({ slug: 'bench', settings, tools: [tool], server: null, refreshedAt: null, refreshError: null, stampMicros: 0 }, [], {
      credentials: { headersFor: async () => ({}) },
      allowPrivate: true,
    });
    const ctx = {
      workspaceId: 'bench',
      kv: null,
      http: { allowPrivate: true, timeoutMs: 10_000, maxBytes: 1 << 20 },
      limits: DEFAULT_RUN_LIMITS,
      budget: renderBudget(DEFAULT_RUN_LIMITS),
    };
    const service = await cpuPerCall(calls, async (i) => {
      const outcome = await invokeTool('bench.lookup', app.tools[0], { id: String(i) }, ctx);
      if (!outcome.ok) throw new Error(outcome.error);
    });
    const row = (name, m) => `| ${name} | ${m.cpu.toFixed(0)} | ${m.wall.toFixed(0)} |`;
    console.log(`${calls} calls each, node ${process.version}\n`);
    console.log('| path | CPU µs per call (this process) | wall µs per call |\n|---|---|---|');
    console.log(row('direct: a connected SDK client', direct));
    console.log(row('service: a session per call (app-module.ts)', service));
    console.log(`\nthe service's call costs ${((service.cpu - direct.cpu) / 1000).toFixed(2)} ms of CPU more than the direct one`);
  } finally {
    peer.kill();
  }
}

if (values.peer) runPeer();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
