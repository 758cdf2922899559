#!/usr/bin/env node
// Event subscriptions under load (issue 49): workflow test runs started at a steady rate over 8
// workspaces, each workspace with one event endpoint (a receiver in this process, on loopback).
// Measured: the time from a run's end (its `run.finished` event's timestamp, written with the end)
// to the delivery's arrival, p50/p99; and the service's CPU per run without endpoints, then with
// them, alternating phases on one server (without then with, then with then without, …) so a
// drifting machine or a growing file moves both alike. Two subscriptions:
// `run.finished` only, and `*` (every run event: three deliveries per run).
//
//   npm run build && node scripts/bench-events.js [--rate 200] [--seconds 15] [--rounds 2] [--types run.finished|all] [--outbox-only]
// The last row of each subscription pools its rounds (the bench's spread is as wide as most changes: use several).
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const { serve } = require('./bench-service');
const argOf = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const RATE = Number(argOf('--rate', 200));
const SECONDS = Number(argOf('--seconds', 15));
const ROUNDS = Number(argOf('--rounds', 2));
const WORKSPACES = 8;
// --outbox-only: the service sends nothing (EVENT_DELIVERY_CONCURRENCY=0), so the share is what writing the deliveries with the runs costs.
const OUTBOX_ONLY = process.argv.includes('--outbox-only');
const TICKS = 100; // clock ticks per second of /proc/<pid>/stat (Linux's USER_HZ)

/** The process's CPU seconds so far (user + system). */
function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** A receiver of every workspace's deliveries: the latency of each `run.finished`, from its timestamp. */
function receiver() {
  const latencies = [];
  let deliveries = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      deliveries++;
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (event.type === 'run.finished') latencies.push(Date.now() - Date.parse(event.timestamp));
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}/events`, latencies, count: () => deliveries, server })),
  );
}

async function call(url, token, method, route, body, headers = {}) {
  const res = await fetch(`${url}/api/build${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
  return { etag: res.headers.get('etag'), data: res.status === 204 ? null : (await res.json()).data };
}

/** Starts RATE runs a second for SECONDS, round-robin over the workspaces; resolves when every run has ended. */
async function load(url, tokens) {
  const started = [];
  const t0 = performance.now();
  for (let i = 0; i < RATE * SECONDS; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const token = tokens[i % tokens.length];
    started.push(call(url, token, 'POST', '/workflows/quick/test', {}).then((r) => ({ token, id: r.data.run_id })));
  }
  const runs = await Promise.all(started);
  // Every run ended: the last ones' status read until terminal.
  for (const run of runs.slice(-WORKSPACES)) {
    for (;;) {
      const { data } = await call(url, run.token, 'GET', `/workflow-runs/${run.id}`);
      if (!['queued', 'running'].includes(data.status)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return runs.length;
}

const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

async function measure(types) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-events-'));
  const env = {
    DATABASE_PATH: path.join(dir, 'build.db'),
    PUBLIC_BASE_URL: 'http://bench.test',
    DEFAULT_CREDITS: '1000000000',
    HTTP_TOOL_ALLOW_PRIVATE: '1',
    RATE_LIMIT_WORKSPACE: '0',
    RATE_LIMIT_CALLER: '0',
    RATE_LIMIT_WORKSPACE_RUNS: '0',
    RATE_LIMIT_CALLER_RUNS: '0',
    RUN_WORKERS: '8',
    RUN_WORKERS_PER_WORKSPACE: '4',
    ...(OUTBOX_ONLY && { EVENT_DELIVERY_CONCURRENCY: '0' }),
  };
  const { child, url } = await serve(env, path.join(dir, 'service.log'));
  const sink = await receiver();
  try {
    const tokens = Array.from({ length: WORKSPACES }, (_, i) =>
      execFileSync(process.execPath, [path.join(root, 'bin', 'build-api.js'), 'token', '--user', 'bench', '--workspace', `bench-${i}`], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      }).trim(),
    );
    for (const token of tokens) {
      await call(url, token, 'PUT', '/workflows', {
        kind: 'service.workflow/v1',
        slug: 'quick',
        name: 'Quick',
        steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { n: 1 } }],
      });
    }
    const endpoints = [];
    const subscribe = async () => {
      for (const token of tokens) {
        const { data } = await call(url, token, 'PUT', '/event-endpoints', { url: sink.url, event_types: types, description: null });
        endpoints.push({ token, id: data.id });
      }
    };
    const unsubscribe = async () => {
      for (const e of endpoints.splice(0)) {
        const { etag } = await call(url, e.token, 'GET', `/event-endpoints/${e.id}`);
        await call(url, e.token, 'DELETE', `/event-endpoints/${e.id}`, undefined, { 'if-match': etag });
      }
    };
    // Warm-up: both phases once.
    await load(url, tokens);
    await subscribe();
    await load(url, tokens);
    await unsubscribe();
    const cpu = { without: [], with: [] };
    /** One phase's CPU per run; with endpoints, also until every delivery of its runs arrived. */
    const phase = async (withEndpoints) => {
      if (withEndpoints) await subscribe();
      sink.latencies.length = 0;
      const expected = sink.count() + (withEndpoints ? RATE * SECONDS * (types[0] === '*' ? 3 : 1) : 0);
      const before = cpuSeconds(child.pid);
      const runs = await load(url, tokens);
      // The deliveries of the last runs may still be on their way: their cost is the phase's.
      while (withEndpoints && !OUTBOX_ONLY && sink.count() < expected) await new Promise((r) => setTimeout(r, 20));
      const perRun = (cpuSeconds(child.pid) - before) / runs;
      if (withEndpoints) await unsubscribe();
      return perRun;
    };
    for (let r = 0; r < ROUNDS; r++) {
      // Odd rounds take the phases the other way round (A B, B A, …): whatever drifts along the run
      // (the file grows by a phase's runs and deliveries) weighs on both phases alike.
      const order = r % 2 === 0 ? [false, true] : [true, false];
      let latencies = [];
      for (const withEndpoints of order) {
        const perRun = await phase(withEndpoints);
        (withEndpoints ? cpu.with : cpu.without).push(perRun);
        if (withEndpoints) latencies = [...sink.latencies];
      }
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      const share = cpu.with[r] / cpu.without[r] - 1;
      console.log(
        `| ${types.join(',')} | ${r + 1} | ${(cpu.without[r] * 1e6).toFixed(0)} | ${(cpu.with[r] * 1e6).toFixed(0)} | ${(share * 100).toFixed(1)} % | ${p50} | ${p99} | ${latencies.length} |`,
      );
    }
    // The rounds pooled: each phase of a round is as long as the other, so the sums weigh them alike.
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    const shares = cpu.with.map((w, r) => w / cpu.without[r] - 1).sort((a, b) => a - b);
    console.log(
      `| ${types.join(',')} | all ${ROUNDS} | ${((sum(cpu.without) / ROUNDS) * 1e6).toFixed(0)} | ${((sum(cpu.with) / ROUNDS) * 1e6).toFixed(0)} | ${((sum(cpu.with) / sum(cpu.without) - 1) * 100).toFixed(1)} % (median ${(shares[Math.floor(ROUNDS / 2)] * 100).toFixed(1)} %) | | | |`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    sink.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  const which = argOf('--types', 'both');
  console.log(`${RATE} runs/s for ${SECONDS} s over ${WORKSPACES} workspaces, SQLite, ${os.cpus().length} cores (${os.cpus()[0].model})`);
  console.log('| subscribed | round | CPU µs per run, no endpoints | with endpoints | delivery share | run.finished p50 ms | p99 ms | deliveries timed |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  if (which !== 'all') await measure(['run.finished']);
  if (which !== 'run.finished') await measure(['*']);
})().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
