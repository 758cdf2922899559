#!/usr/bin/env node
// Soak: a real server on a temporary database, mixed traffic at high concurrency over loopback for a
// bounded time (reads, lists, validates, durable replaces, workflow test runs with polling, catalog,
// the 401 path), a health check every second and the server's RSS sampled every second. Fails on any
// 5xx or failed health check. Prints a summary; with --write it also updates docs/reliability.md.
//
//   node scripts/soak.js [--seconds 120] [--concurrency 64] [--write]
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { QUOTAS_ABOVE_ANY_LOAD } = require('./quotas');
const { parseArgs } = require('node:util');

const root = path.resolve(__dirname, '..');
const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '120' }, concurrency: { type: 'string', default: '64' }, write: { type: 'boolean', default: false } },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const PUBLIC_BASE_URL = 'http://soak.test';

function startServer(dataDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'build-api.js'), 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        METRICS_PORT: '0',
        SMTP_PORT: '0', // one listening port: the HTTP one, which listeningPort reads from /proc
        DRAIN_SECONDS: '0',
        HOST: '127.0.0.1',
        DATABASE_PATH: path.join(dataDir, 'build.db'),
        PUBLIC_BASE_URL,
        LOG_LEVEL: 'warn',
        DEFAULT_CREDITS: '100000000',
        ...QUOTAS_ABOVE_ANY_LOAD,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    // LOG_LEVEL=warn hides the listening line, so find the port from /proc once the process listens.
    const started = Date.now();
    const timer = setInterval(async () => {
      const port = listeningPort(child.pid);
      if (port) {
        clearInterval(timer);
        resolve({ child, baseUrl: `http://127.0.0.1:${port}` });
      } else if (Date.now() - started > 20000) {
        clearInterval(timer);
        reject(new Error('server did not start'));
      }
    }, 100);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** The TCP port a process listens on, from /proc (Linux). */
function listeningPort(pid) {
  try {
    const inodes = new Set(
      fs
        .readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return '';
          }
        })
        .map((link) => /socket:\[(\d+)\]/.exec(link)?.[1])
        .filter(Boolean),
    );
    for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9])) return parseInt(cols[1].split(':')[1], 16);
    }
  } catch {
    /* not yet */
  }
  return null;
}

function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

async function main() {
  execBuildIfNeeded();
  const { openLocalIssuer } = require(path.join(root, 'dist/src/auth/local-issuer'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-soak-'));
  const { child, baseUrl } = await startServer(dataDir);
  const token = openLocalIssuer(dataDir, PUBLIC_BASE_URL).mint({
    sub: 'soak',
    audience: 'build-api',
    claims: { workspace: 'soak', scope: 'build' },
    ttlSeconds: 86400,
  });
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const latencies = {};
  const statuses = {};
  let fiveHundreds = 0;
  let healthFailures = 0;

  async function call(kind, method, url, body, headers = auth) {
    const started = process.hrtime.bigint();
    const res = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    (latencies[kind] ??= []).push(ms);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status >= 500) {
      fiveHundreds++;
      console.error(`${kind}: ${res.status} ${text.slice(0, 200)}`);
    }
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  }

  const agentBody = (name) => ({
    kind: 'service.agent/v1',
    name,
    description: null,
    icon: null,
    space: { team: null },
    folder: null,
    instructions: 'Soak.',
    model: 'builtin/scripted',
    max_steps: 4,
    tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
    skills: [],
    workspace_skills: [],
    workflows: [],
    schedule: {},
    email: {},
    whatsapp: {},
    triggers: [{ kind: 'webhook', name: 'Hook' }],
    eval_criteria: [],
  });
  const workflowBody = (slug) => ({
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    steps: [
      { id: 'a', kind: 'tool', tool: 'core.echo', args: { n: 1 } },
      { id: 'b', kind: 'tool', tool: 'kv.set', args: { key: slug, value: '{{steps.a.output}}' }, after: ['a'] },
      { id: 'c', kind: 'tool', tool: 'time.now', after: ['a'] },
    ],
  });

  async function worker(i, deadline) {
    const created = await call('create agent', 'PUT', '/api/build/agents', agentBody(`Soak ${i}`));
    let doc = created.body.data.document;
    await call('create workflow', 'PUT', '/api/build/workflows', workflowBody(`soak-${i}`));
    for (let n = 0; Date.now() < deadline; n++) {
      switch (n % 8) {
        case 0:
        case 1:
          await call('read agent', 'GET', `/api/build/agents/${doc.id}`);
          break;
        case 2:
          await call('list agents', 'GET', '/api/build/agents');
          break;
        case 3:
          await call('validate agent', 'POST', '/api/build/agents/validate', agentBody(`Check ${i}`));
          break;
        case 4: {
          const res = await call(
            'replace agent',
            'PUT',
            `/api/build/agents/${doc.id}`,
            { ...doc, instructions: `v${n}` },
            { ...auth, 'if-match': `"${doc.updated_at}"` },
          );
          if (res.status === 200) doc = res.body.data.document;
          break;
        }
        case 5: {
          const res = await call('test workflow', 'POST', `/api/build/workflows/soak-${i}/test`, { input: {} });
          if (res.status === 202) {
            for (let k = 0; k < 100; k++) {
              const run = await call('poll workflow run', 'GET', `/api/build/workflow-runs/${res.body.data.run_id}`);
              if (['succeeded', 'failed', 'refused'].includes(run.body.data.status)) break;
            }
          }
          break;
        }
        case 6:
          await call('catalog', 'GET', '/api/build/catalog');
          break;
        default:
          await call('401 path', 'GET', '/api/build/agents', undefined, {});
      }
    }
  }

  const rss = [];
  const deadline = Date.now() + SECONDS * 1000;
  const sampler = setInterval(async () => {
    rss.push(Math.round(rssMb(child.pid)));
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (res.status !== 200) healthFailures++;
    } catch {
      healthFailures++;
    }
  }, 1000);
  const started = Date.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => worker(i, deadline)));
  const elapsed = (Date.now() - started) / 1000;
  clearInterval(sampler);
  child.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });

  const all = Object.values(latencies)
    .flat()
    .sort((a, b) => a - b);
  const rows = Object.entries(latencies).map(([kind, list]) => {
    const sorted = list.sort((a, b) => a - b);
    return `| ${kind} | ${sorted.length} | ${percentile(sorted, 50).toFixed(1)} | ${percentile(sorted, 99).toFixed(1)} |`;
  });
  const third = Math.max(1, Math.floor(rss.length / 3));
  const avg = (xs) => Math.round(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length));
  const summary = [
    `Soak of ${SECONDS} s at ${CONCURRENCY} concurrent clients on ${os.cpus().length} cores (${new Date().toISOString().slice(0, 10)}), node ${process.version}:`,
    `${all.length} requests (${Math.round(all.length / elapsed)}/s), statuses ${JSON.stringify(statuses)}, 5xx: ${fiveHundreds}, failed health checks: ${healthFailures}.`,
    `Latency over all requests: p50 ${percentile(all, 50).toFixed(1)} ms, p99 ${percentile(all, 99).toFixed(1)} ms.`,
    `Server RSS (MB) sampled each second: first third avg ${avg(rss.slice(0, third))}, last third avg ${avg(rss.slice(-third))}, max ${Math.max(...rss)}.`,
    `RSS curve (MB, one sample per ${Math.max(1, Math.round(rss.length / 24))} s): ${rss.filter((_, i) => i % Math.max(1, Math.round(rss.length / 24)) === 0).join(' ')}`,
    '',
    '| request | count | p50 ms | p99 ms |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
  console.log(summary);
  if (values.write) {
    const doc = path.join(root, 'docs', 'reliability.md');
    const text = fs.readFileSync(doc, 'utf8');
    fs.writeFileSync(doc, text.replace(/<!-- soak:start -->[\s\S]*<!-- soak:end -->/, `<!-- soak:start -->\n${summary}\n<!-- soak:end -->`));
  }
  const flat = avg(rss.slice(-third)) <= avg(rss.slice(0, third)) * 1.5 + 20;
  if (fiveHundreds || healthFailures || !flat) {
    console.error(`soak failed: 5xx=${fiveHundreds}, health failures=${healthFailures}, memory flat=${flat}`);
    process.exit(1);
  }
}

function execBuildIfNeeded() {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli.js'))) throw new Error('run npm run build first');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
