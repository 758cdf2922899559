#!/usr/bin/env node
// What a workspace's own apps cost the requests that read them (issue 44's target: the catalog and
// document validation within 10 % of today's CPU with 50 workspace apps of 100 tools each). One
// service in this process on a SQLite file; the use cases are called directly (no HTTP, which is
// the same for both), each case its CPU per operation for a workspace with no apps of its own and
// for one with 50 apps of 100 tools, alternating rounds.
//
//   npm run build && node scripts/bench-app-registry.js [--ops N] [--rounds R]
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const root = path.join(__dirname, '..');
const { loadConfig } = require(path.join(root, 'dist/src/config'));
const { createService } = require(path.join(root, 'dist/src/service'));
const { createLogger } = require(path.join(root, 'dist/src/log'));
const { validateAgent } = require(path.join(root, 'dist/src/services/agents'));
const { getCatalog, getCatalogApp } = require(path.join(root, 'dist/src/services/catalog'));

const { values } = parseArgs({ options: { ops: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '4' } } });

const tool = (app, i) => ({
  slug: `${app}.tool_${i}`,
  name: `Tool ${i}`,
  description: 'Does one thing to a ticket, as its server describes it at some length.',
  read_only: i % 2 === 0,
  destructive: i % 2 === 1,
  args_schema: { type: 'object', properties: { id: { type: 'string', description: 'The ticket' }, note: { type: 'string' } }, required: ['id'] },
});

async function seed(store, ws) {
  for (let a = 0; a < 50; a++) {
    const slug = `app-${a}`;
    const mcp = { url: `https://mcp-${a}.example/mcp`, auth: 'none', timeout_ms: 10_000, output_bytes: 262_144, trust_annotations: true };
    await store.apps.create(
      ws,
      { kind: 'service.app/v1', slug, name: `App ${a}`, description: null, mcp },
      { limit: 50, deriveSlug: false, reserved: new Set() },
    );
    const tools = Array.from({ length: 100 }, (_, i) => tool(slug, i));
    await store.apps.recordRefresh(ws, slug, { tools, server: { name: 's', version: '1', protocol_version: '2025-11-25' } }, new Date().toISOString());
  }
}

function measure(ops, work) {
  return async () => {
    for (let i = 0; i < 100; i++) await work();
    const started = process.cpuUsage();
    for (let i = 0; i < ops; i++) await work();
    const used = process.cpuUsage(started);
    return (used.user + used.system) / ops;
  };
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-apps-'));
  const config = loadConfig({ DATA_DIR: dir, DATABASE_PATH: path.join(dir, 'build.db'), PORT: '0', METRICS_PORT: '0' });
  const service = await createService(config, createLogger('silent'));
  try {
    const who = (ws) => ({ userId: 'bench', workspaceId: ws, teams: [], admin: false });
    await seed(service.store, 'crowded');
    const agent = (apps) => ({
      kind: 'service.agent/v1',
      name: 'Bench agent',
      description: null,
      icon: null,
      space: { team: null },
      folder: null,
      instructions: 'Answer.',
      model: 'builtin/scripted',
      max_steps: 3,
      tools: { apps, connections: 'all', disabled_tools: [], approval: 'write' },
      skills: [],
      workspace_skills: [],
      workflows: [],
      schedule: {},
      email: {},
      whatsapp: {},
      triggers: [],
      eval_criteria: [],
    });
    const ops = Number(values.ops);
    const cases = [
      ['validate an agent', (ws, apps) => measure(ops, () => validateAgent(service.ctx, who(ws), agent(apps)))],
      ['read the catalog', (ws) => measure(ops, () => getCatalog(service.ctx, who(ws)))],
      ['read a built-in catalog app', (ws) => measure(ops, () => getCatalogApp(service.ctx, who(ws), 'kv'))],
    ];
    console.log(`| case | CPU µs/op, no apps of its own | CPU µs/op, 50 apps × 100 tools | ratio |\n|---|---|---|---|`);
    for (const [name, make] of cases) {
      const plain = [];
      const crowded = [];
      for (let r = 0; r < Number(values.rounds); r++) {
        plain.push(await make('plain', ['kv', 'core'])());
        crowded.push(await make('crowded', ['kv', 'core', 'app-3', 'app-7'])());
      }
      const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      console.log(`| ${name} | ${median(plain).toFixed(1)} | ${median(crowded).toFixed(1)} | ${(median(crowded) / median(plain)).toFixed(2)} |`);
    }
  } finally {
    await service.close(0);
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
