#!/usr/bin/env node
// A signed app event that starts a run against a webhook delivery that starts one (issue 46: the
// former at ≥ 0.8× the latter's rate), on SQLite and on PostgreSQL, each measured in alternating
// rounds so a drifting machine moves both alike. Every request is a new delivery (its own id), so
// each one queues a run; the runs execute beside the load (the scripted model, one step), as they
// would. The event is GitHub's: an HMAC-SHA256 of the body, checked before anything else.
//
//   npm run build && node scripts/bench-app-events.js [--seconds 5] [--rounds 3]
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { startCluster } = require('./pg-cluster');

const root = path.join(__dirname, '..');
const { serve } = require('./bench-service');
const arg = (name, fallback) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const SECONDS = arg('--seconds', 5);
const ROUNDS = arg('--rounds', 3);
const CONNECTIONS = 16;
const SECRET = 'bench-github-secret';

async function seed(url, token) {
  const call = async (method, route, body, headers = {}) => {
    const res = await fetch(`${url}/api/build${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return { etag: res.headers.get('etag'), data: (await res.json()).data };
  };
  const connection = await call('PUT', '/connections', { ref: 'github:bench', app: 'github', credentials: { kind: 'signing_secret', secret: SECRET } });
  const agent = {
    kind: 'service.agent/v1',
    name: 'Bench listener',
    description: null,
    icon: null,
    space: { team: null },
    folder: null,
    instructions: '',
    model: 'builtin/scripted',
    max_steps: 1,
    tools: { apps: [], connections: 'all', disabled_tools: [], approval: 'write' },
    skills: [],
    workspace_skills: [],
    workflows: [],
    schedule: {},
    email: {},
    whatsapp: {},
    triggers: [
      { kind: 'webhook', name: 'Hook' },
      { kind: 'app_event', name: 'Pushes', app: 'github', event: 'push', connection: 'github:bench' },
    ],
    eval_criteria: [],
  };
  const created = await call('PUT', '/agents', agent);
  await call('POST', `/agents/${created.data.document.slug}/status`, { status: 'active' }, { 'if-match': created.etag });
  return { hook: new URL(created.data.webhook_urls[0].url).pathname, events: new URL(connection.data.receive_url).pathname };
}

const BODY = JSON.stringify({ ref: 'refs/heads/main', before: '0'.repeat(40), after: 'f'.repeat(40), commits: [{ id: 'f'.repeat(40), message: 'Fix' }] });

/** Requests/s of deliveries to `route`, each with its own id (`headersOf` gives a request's headers). */
function load(url, route, headersOf) {
  let n = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `${url}${route}`,
        connections: CONNECTIONS,
        duration: SECONDS,
        requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, body: BODY, headers: { 'content-type': 'application/json', ...headersOf(++n) } }) }],
      },
      (err, result) => {
        if (err) return reject(err);
        if (result.non2xx) return reject(new Error(`${route}: ${result.non2xx} responses were not 2xx`));
        resolve(result.requests.average);
      },
    );
  });
}

const webhookHeaders = (n) => ({ 'webhook-id': `hook-${process.pid}-${n}-${Date.now()}` });
const githubHeaders = (n) => ({
  'x-github-event': 'push',
  'x-github-delivery': crypto.randomUUID(),
  'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', SECRET).update(BODY).digest('hex')}`,
  'x-n': String(n),
});

async function measure(name, env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-events-'));
  const { child, url } = await serve(
    { DATABASE_PATH: path.join(dir, 'build.db'), PUBLIC_BASE_URL: 'http://bench.test', DEFAULT_CREDITS: '1000000000', WEBHOOK_RATE_LIMIT: '1000000', ...env },
    path.join(dir, 'service.log'),
  );
  try {
    const { execFileSync } = require('node:child_process');
    const token = execFileSync(process.execPath, [path.join(root, 'bin', 'build-api.js'), 'token', '--user', 'bench', '--workspace', 'bench'], {
      env: { ...process.env, DATABASE_PATH: path.join(dir, 'build.db'), PUBLIC_BASE_URL: 'http://bench.test', ...env },
      encoding: 'utf8',
    }).trim();
    const { hook, events } = await seed(url, token);
    await load(url, hook, webhookHeaders); // warm-up, both paths
    await load(url, events, githubHeaders);
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push({ webhook: await load(url, hook, webhookHeaders), event: await load(url, events, githubHeaders) });
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const webhook = median(rounds.map((r) => r.webhook));
    const event = median(rounds.map((r) => r.event));
    const ratio = median(rounds.map((r) => r.event / r.webhook));
    console.log(`| ${name} | ${webhook.toFixed(0)} | ${event.toFixed(0)} | ${ratio.toFixed(2)} |`);
    return ratio;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  console.log(`${SECONDS} s × ${ROUNDS} alternating rounds, ${CONNECTIONS} connections, ${os.cpus().length} cores (${os.cpus()[0].model})`);
  console.log('| store | webhook deliveries/s | signed GitHub events/s | events ÷ webhooks (median of rounds) |');
  console.log('| --- | --- | --- | --- |');
  await measure('SQLite', {});
  const cluster = await startCluster({ durable: true });
  try {
    await measure('PostgreSQL', { DATABASE_URL: cluster.url });
  } finally {
    await cluster.stop();
  }
})().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
