#!/usr/bin/env node
// npm run bench: the real server on a temporary database seeded with a realistic workspace (100
// agents of ~8 KiB, 100 workflows of 10 steps), measured with autocannon over loopback next to
// baselines that answer the same bytes from memory: bare node:http, bare express (measured again
// around every scenario), and bare express on the service's own server. Every scenario is reported
// as requests/s, p50/p99 latency, peak RSS, server CPU per operation, and as a ratio to each
// baseline, so figures survive a noisy machine. Writes docs/benchmarks.md (not in --smoke mode, the CI check).
//
// Then the same scenarios on the two stores side by side, in one run: SQLite, PostgreSQL with one
// replica, PostgreSQL with two replicas behind the load generator (a throwaway durable cluster on
// this machine: scripts/pg-cluster.js), each scenario measured on the three in turn, with the
// database server's CPU per operation beside the service's.
//
//   node scripts/bench.js [--seconds 10] [--connections 32] [--smoke]
//                         [--only <scenario prefix>] [--cpu-prof <dir>] [--stores sqlite,postgres,postgres-2 | --stores none]
//                         [--against <other checkout> [--rounds 5] [--startup]]
// --only runs the baselines and the scenarios whose names start with the prefix (no doc update);
// --cpu-prof runs the service under `node --cpu-prof` and writes its profile to <dir> on exit
// (summarise it with scripts/profile-summary.js); --against compares another built checkout's
// service with this one in alternating rounds (see compare()), on the first store --stores names;
// --startup adds the start-up times of both. `npm run bench:compare -- <ref>` (bench-compare.js)
// builds a commit to compare against and runs this.
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { QUOTAS_ABOVE_ANY_LOAD } = require('./quotas');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');

const root = path.resolve(__dirname, '..');
const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    connections: { type: 'string', default: '32' },
    smoke: { type: 'boolean', default: false },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
    against: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    startup: { type: 'boolean', default: false },
    stores: { type: 'string', default: 'sqlite,postgres,postgres-2' },
  },
});
const SMOKE = values.smoke;
const SECONDS = Number(values.seconds ?? (SMOKE ? 1 : 10));
const CONNECTIONS = Number(values.connections);
const WARMUP_SECONDS = SMOKE ? 0 : 2;
/** Each measurement of the express baseline that brackets the scenarios (see main). */
const BRACKET_SECONDS = Math.max(1, SECONDS / 2);
const AGENTS = SMOKE ? 5 : 100;
const WORKFLOWS = SMOKE ? 5 : 100;
/** Runs in the workspace the run-list scenarios page through. */
const LISTED_RUNS = SMOKE ? 2000 : 100_000;
/** The versions of the agent whose version list is read (each a replace through the API). */
const KEPT_VERSIONS = SMOKE ? 200 : 10_000;
/** Event streams open on one run in the fan-out scenario. */
const STREAMS = SMOKE ? 50 : 1000;
const PUBLIC_BASE_URL = 'http://bench.test';
const ONLY = values.only;
const CPU_PROF = values['cpu-prof'] && path.resolve(values['cpu-prof']);
const AGAINST = values.against;
const ROUNDS = Number(values.rounds);
// --only takes one prefix or several, comma-separated.
const selected = (name) => !ONLY || ONLY.split(',').some((prefix) => name.startsWith(prefix.trim()));
/** The stores of the side-by-side comparison: `sqlite`, `postgres` (one replica), `postgres-N` (N replicas). */
const STORES = values.stores === 'none' ? [] : values.stores.split(',').map(storeOf);

function storeOf(name) {
  if (name === 'sqlite') return { name: 'SQLite', kind: 'sqlite', replicas: 1 };
  const m = /^postgres(?:-(\d+))?$/.exec(name);
  if (!m) throw new Error(`--stores: unknown store '${name}' (sqlite, postgres, postgres-N)`);
  const replicas = Number(m[1] ?? 1);
  return { name: `PostgreSQL, ${replicas} replica${replicas > 1 ? 's' : ''}`, kind: 'postgres', replicas };
}

if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli.js'))) throw new Error('run npm run build first');
const { localIssuerFromKey, openLocalIssuer } = require(path.join(root, 'dist/src/auth/local-issuer'));
const { uuidV7 } = require(path.join(root, 'dist/src/ids'));
const { openSqlite } = require(path.join(root, 'dist/src/sqlite-driver'));
const pg = require('pg');
const { startCluster } = require('./pg-cluster');
const { mixScenario, MIX_NAME } = require('./bench-mix');
const { agentDocument, workflowDocument } = require('./bench-documents');
const http = require('node:http');
const { freePort } = require('./free-port');

/**
 * Starts a child process that prints its port (as JSON or in the listening log line). With
 * `logFile`, its standard output goes to that file, as a deployed service's logs go to a file or a
 * collector: draining a pipe of a log line per request would cost this process (the load
 * generator's) CPU, which the baselines, logging nothing, do not pay.
 */
function startProcess(args, env, portOf, logFile) {
  return new Promise((resolve, reject) => {
    const stdout = logFile ? fs.openSync(logFile, 'w') : 'pipe';
    // Compared services answer bench-probe.js's messages on an IPC channel.
    const stdio = ['ignore', stdout, 'inherit', ...(AGAINST ? ['ipc'] : [])];
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio });
    if (logFile) fs.closeSync(stdout);
    let found = false;
    const look = (text) => {
      for (const line of text.split('\n')) {
        const port = line && portOf(line);
        if (port) {
          found = true;
          resolve({ child, url: `http://127.0.0.1:${port}` });
          return true;
        }
      }
      return false;
    };
    if (logFile) {
      const timer = setInterval(() => (found || look(fs.readFileSync(logFile, 'utf8'))) && clearInterval(timer), 50);
      child.once('exit', () => clearInterval(timer));
    } else {
      let buffered = '';
      child.stdout.on('data', (chunk) => {
        if (!found) look((buffered += chunk));
      });
    }
    child.once('exit', (code) => !found && reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

/** Loaded into compared services: their own process.cpuUsage() on request (cpuMicrosOf). */
const PROBE = path.join(__dirname, 'bench-probe.js');

/** The CPU time (µs) a compared service's processes have used, as each reports it (bench-probe.js). */
async function cpuMicrosOf(children) {
  const each = await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          child.once('message', (m) => resolve(m.cpuMicros));
          child.send('cpu-usage');
        }),
    ),
  );
  return each.reduce((a, b) => a + b, 0);
}

const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

/** CPU seconds `pid` has used (user + system; /proc counts in USER_HZ, 100 per second on Linux). */
const cpuOf = (pid) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/**
 * Runs `fn` while sampling the RSS of `pid`; returns fn's result, the peak in MB, and the CPU time
 * the process spent per operation (`result.count`): a figure the load generator sharing the cores
 * moves far less than requests/s, for comparing one change with the next.
 */
async function withPeakRss(pid, fn, databaseCpu = null) {
  // Several replicas: the peak of the largest, the CPU of all together.
  const pids = [pid].flat();
  const rss = () => Math.max(...pids.map(rssOf));
  const cpu = () => pids.reduce((sum, p) => sum + cpuOf(p), 0);
  let peak = rss();
  const cpuBefore = cpu();
  const databaseBefore = databaseCpu?.();
  const timer = setInterval(() => (peak = Math.max(peak, rss())), 100);
  try {
    const result = await fn();
    const perOp = (seconds) => (1e6 * seconds) / Math.max(1, result.count);
    return {
      result,
      peakRss: Math.max(peak, rss()),
      cpuPerOp: perOp(cpu() - cpuBefore),
      ...(databaseCpu && { databaseCpuPerOp: perOp(databaseCpu() - databaseBefore) }),
    };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Runs a scenario (a function of its duration in seconds) for WARMUP_SECONDS unmeasured — the
 * server's JIT settles on the scenario's code, as it has in a service that has been up a while —
 * then for SECONDS measured (withPeakRss).
 */
async function measure(pid, scenario, warm = true, seconds = SECONDS, databaseCpu = null) {
  if (warm && WARMUP_SECONDS) await scenario(WARMUP_SECONDS);
  return withPeakRss(pid, () => scenario(seconds), databaseCpu);
}

function cannon(opts) {
  return new Promise((resolve, reject) => {
    autocannon({ connections: CONNECTIONS, pipelining: 1, ...opts }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/**
 * autocannon for operations that carry state from one request to the next on a connection (a
 * stamp, a run id). autocannon resets a connection's `context` each time it loops over its
 * requests; here each connection keeps the state `newState()` gives it for the whole scenario.
 * (autocannon's client costs the shared cores far less than fetch, so the server gets its share.)
 */
function statefulCannon(opts, newState) {
  return cannon({
    ...opts,
    setupClient(client) {
      const state = newState();
      client.requestIterator.resetContext = function keep() {
        this.context = state;
      };
      client.requestIterator.resetContext();
      client.requestIterator.rebuildRequest(); // the first request was built before this client had its state
    },
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

const summarise = (r) => ({
  rps: r.requests.average,
  count: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors + r.timeouts,
  statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, { count }]) => [code, count])),
});

/**
 * The service built in `dir` (a checkout after `npm run build`), on a fresh database: the SQLite
 * file in `dataDir`, or with `databaseUrl` that PostgreSQL database, served by `replicas` processes
 * (`url`: the first, which seeds; `urls`: all, which the scenarios spread their connections over).
 */
async function startService(dir, dataDir, databaseUrl = null, replicas = 1) {
  const env = {
    PORT: '0',
    DRAIN_SECONDS: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: path.join(dataDir, 'build.db'),
    PUBLIC_BASE_URL,
    DEFAULT_CREDITS: '1000000000',
    // The fan-out scenario follows one run from STREAMS streams of one caller: above the per-caller
    // and per-process defaults (20 streams, 1,000 connections), as an operator would set them for it.
    EVENT_STREAMS_PER_CALLER: String(STREAMS + 100),
    HTTP_MAX_CONNECTIONS: String(4 * STREAMS + 1000),
    // The request quotas stay on (their cost is measured) but too high to refuse a scenario's load.
    ...QUOTAS_ABOVE_ANY_LOAD,
    // The version lists' document keeps all its versions (the default, 100, would let maintenance
    // prune them during a long run), as an operator who wants that history would set it.
    VERSIONS_KEPT: String(KEPT_VERSIONS),
    ...(databaseUrl && { DATABASE_URL: databaseUrl }),
  };
  const processes = [];
  for (let i = 0; i < replicas; i++) {
    processes.push(
      await startProcess(
        [
          ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []),
          ...(AGAINST ? ['--require', PROBE] : []),
          path.join(dir, 'bin', 'build-api.js'),
          'serve',
        ],
        // Metrics on, as deployed: each process on a port of its own.
        { ...env, METRICS_PORT: String(await freePort()) },
        (line) => line.includes('"build-api listening"') && JSON.parse(line).address.port,
        path.join(dataDir, `service-${i}.log`),
      ),
    );
  }
  const service = {
    child: processes[0].child,
    url: processes[0].url,
    urls: processes.map((p) => p.url),
    pids: processes.map((p) => p.child.pid),
    children: processes.map((p) => p.child),
  };
  const issuer = databaseUrl ? localIssuerFromKey(await storedKey(databaseUrl), PUBLIC_BASE_URL) : openLocalIssuer(dataDir, PUBLIC_BASE_URL);
  const token = issuer.mint({ sub: 'bench', audience: 'build-api', claims: { workspace: 'bench', scope: 'build' }, ttlSeconds: 86400 });
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  // Seeding and the scenarios' own calls, each on a new connection (a pooled keep-alive connection
  // left idle while a scenario runs is nothing the scenarios measure).
  const api = (method, url, body, headers = json) =>
    new Promise((resolve, reject) => {
      // autocannon adds the content-length of its scenario's body to the headers object it is given
      // (a shared one such as `json`): never send that one.
      const { 'content-length': _stale, ...sent } = headers;
      const req = http.request(`${service.url}${url}`, { method, headers: sent, agent: false }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode >= 300) return reject(new Error(`${method} ${url}: ${res.statusCode} ${text}`));
          resolve({ headers: new Headers(res.headers), body: JSON.parse(text) });
        });
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });

  // Seed: 100 agents of ~8 KiB, 100 workflows of 10 steps, one 3-step workflow for runs.
  const agents = [];
  for (let i = 0; i < AGENTS; i++) agents.push((await api('PUT', '/api/build/agents', agentDocument(i))).body.data.document);
  for (let i = 0; i < WORKFLOWS; i++) await api('PUT', '/api/build/workflows', workflowDocument(`bench-flow-${i}`, 10));
  await api('PUT', '/api/build/workflows', workflowDocument('bench-run', 3));
  await api('PUT', '/api/build/workflows', { ...workflowDocument('bench-off', 3), enabled: false });
  const finishedRunId = (await api('POST', '/api/build/workflows/bench-run/test', { input: {} })).body.data.run_id;
  while (['queued', 'running'].includes((await api('GET', `/api/build/workflow-runs/${finishedRunId}`)).body.data.status))
    await new Promise((r) => setTimeout(r, 20));
  const readPath = `/api/build/agents/${agents[0].id}`;
  if (selected('list versions')) await seedVersions(api, json, agentDocument(AGENTS));
  const listed = !selected('list runs')
    ? null
    : databaseUrl
      ? await seedListedRunsPg(databaseUrl, agents[0])
      : seedListedRuns(path.join(dataDir, 'build.db'), agents[0]);
  const listToken = issuer.mint({ sub: 'bench', audience: 'build-api', claims: { workspace: LISTED_WORKSPACE, scope: 'build' }, ttlSeconds: 86400 });
  const stop = () =>
    Promise.all(
      processes.map(
        ({ child }) =>
          new Promise((resolve) => {
            child.once('exit', resolve);
            child.kill('SIGTERM'); // a clean exit: --cpu-prof writes its profile then
          }),
      ),
    );
  return {
    ...service,
    issuer,
    api,
    auth,
    json,
    agents,
    readPath,
    finishedRunId,
    listed,
    listAuth: { authorization: `Bearer ${listToken}` },
    readBytes: Buffer.from(JSON.stringify((await api('GET', readPath)).body)),
    stop,
  };
}

const LISTED_WORKSPACE = 'bench-lists';

/**
 * A workspace with LISTED_RUNS finished agent runs over the last 30 days, half test runs of the
 * bench user and half webhook runs, to be written straight into the database (through the API this
 * would take minutes): rows as the service writes them, time-ordered ids, a small agent as the
 * snapshot; with the cursor of a page half-way down. (seedListedRuns, seedListedRunsPg.)
 */
function listedRuns(agent) {
  const snapshot = JSON.stringify(agent); // the document that ran, as the service stores it
  const state = JSON.stringify({
    transcript: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hi' },
    ],
    tool_calls: [],
    final_text: 'hi',
    steps: 1,
  });
  const start = Date.now() - 30 * 86_400_000;
  const step = (30 * 86_400_000) / LISTED_RUNS;
  const rows = [];
  for (let i = 0; i < LISTED_RUNS; i++) {
    const at = Math.floor(start + i * step);
    const iso = new Date(at).toISOString();
    rows.push([uuidV7(at), LISTED_WORKSPACE, agent.id, i % 2 ? 'webhook' : 'test', snapshot, state, iso, iso, iso, agent.slug, agent.name]);
  }
  const ids = rows.map((r) => r[0]).sort();
  return { rows, deepCursor: Buffer.from(JSON.stringify({ id: ids[Math.floor(ids.length / 2)] })).toString('base64url') };
}

/** seedListedRuns for a PostgreSQL database: the same rows, 5,000 to a statement. */
async function seedListedRunsPg(url, agent) {
  const { rows, deepCursor } = listedRuns(agent);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let from = 0; from < rows.length; from += 5000) {
      const batch = rows.slice(from, from + 5000);
      const column = (i) => batch.map((r) => r[i]);
      await client.query(
        `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request, snapshot, state,
           credits_reserved, credits_spent, error, accepted_at, started_at, finished_at, agent_slug, agent_name)
         SELECT id, 'agent', ws, 'bench', target, 1, 'succeeded', source, NULL, '{"prompt":"hi"}', snapshot, state, 2, 2, NULL, accepted, started, finished, slug, name
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
           AS t (id, ws, target, source, snapshot, state, accepted, started, finished, slug, name)`,
        Array.from({ length: 11 }, (_, i) => column(i)),
      );
    }
    await client.query('VACUUM ANALYZE runs'); // as autovacuum would have, over weeks of inserts
  } finally {
    await client.end();
  }
  return { deepCursor };
}

/** The built-in issuer's key as the PostgreSQL store keeps it. */
async function storedKey(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SELECT pem FROM issuer_keys')).rows[0].pem;
  } finally {
    await client.end();
  }
}

function seedListedRuns(file, agent) {
  const db = openSqlite(file);
  db.pragma('busy_timeout = 10000');
  const insert = db.prepare(
    `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request, snapshot, state,
       credits_reserved, credits_spent, error, accepted_at, started_at, finished_at, agent_slug, agent_name)
     VALUES (?, 'agent', ?, 'bench', ?, 1, 'succeeded', ?, NULL, '{"prompt":"hi"}', ?, ?, 2, 2, NULL, ?, ?, ?, ?, ?)`,
  );
  const { rows, deepCursor } = listedRuns(agent);
  db.transaction(() => {
    for (const row of rows) insert.run(...row);
  })();
  // Into the database file, as a service's own checkpoints would have put runs written over weeks
  // (pages read through a WAL of hundreds of megabytes cost each lookup a WAL-index search).
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { deepCursor };
}

/**
 * Opens `count` event streams on one run and resolves once each has seen an event of `type`
 * (`ready`), then measures, per state change, the time from the change to each stream seeing it.
 */
function openStreams(urls, headers, count) {
  const streams = [];
  for (let i = 0; i < count; i++) {
    const stream = { seen: [], waiters: [], req: null };
    stream.req = http.get(urls[i % urls.length], { headers: { ...headers, accept: 'text/event-stream' }, agent: false }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6));
          stream.seen.push(event);
          for (const w of stream.waiters.splice(0)) w();
        }
      });
    });
    stream.req.on('error', () => undefined);
    streams.push(stream);
  }
  /** Resolves (with when) once `stream` has seen an event matching `match`. */
  const sees = (stream, match) =>
    new Promise((resolve) => {
      const check = () => (stream.seen.some(match) ? resolve(performance.now()) : stream.waiters.push(check));
      check();
    });
  return {
    streams,
    sees,
    close: () => {
      for (const s of streams) s.req.destroy();
    },
  };
}

/** An agent written KEPT_VERSIONS times (replaces in a row, each from the last one's stamp). */
async function seedVersions(api, json, doc) {
  let current = (await api('PUT', '/api/build/agents', { ...doc, slug: 'bench-versioned' })).body.data.document;
  for (let version = 2; version <= KEPT_VERSIONS; version++) {
    const { id: _id, slug: _slug, status: _status, ...body } = current;
    const res = await api(
      'PUT',
      `/api/build/agents/${current.id}`,
      { ...body, description: `version ${version}` },
      { ...json, 'if-match': `"${current.updated_at}"` },
    );
    current = res.body.data.document;
  }
}

/** The scenarios against one seeded service, by name. */
function scenariosOf(service) {
  const { auth, json, agents, readPath } = service;
  /** The URL of `route` on every replica (autocannon spreads its connections over them). */
  const at = (route) => (service.urls.length === 1 ? `${service.url}${route}` : service.urls.map((u) => `${u}${route}`));
  const everyReplica = service.urls.length === 1 ? service.url : service.urls;
  /** `expected`: the status every response should have when it is not a 2xx. */
  const cannonScenario = (opts, expected) => async (seconds) => {
    const result = await cannon({ ...opts, duration: seconds });
    return { ...summarise(result), unit: 'req/s', expected };
  };
  const { id: _id, slug: _slug, status: _status, updated_at: _u, ...draft } = agents[1];
  const latest = [...agents]; // each agent as its last replace left it
  let writes = 0;
  /** Durable replaces on `connections` connections, each writing an agent of its own. */
  const replaceScenario = (connections) => async (seconds) => {
    // A run ends with writes in flight whose replies it drops: start from what is stored.
    for (const [i, agent] of latest.entries()) latest[i] = (await service.api('GET', `/api/build/agents/${agent.id}`)).body.data;
    let owners = 0;
    const result = await statefulCannon(
      {
        url: everyReplica,
        duration: seconds,
        connections,
        requests: [
          {
            setupRequest: (req, state) => {
              const doc = latest[state.owner ?? 0]; // autocannon builds a first request before setupClient gives the state
              const body = JSON.stringify({ ...doc, description: `write ${++writes}` });
              return { ...req, method: 'PUT', path: `/api/build/agents/${doc.id}`, headers: { ...json, 'if-match': `"${doc.updated_at}"` }, body };
            },
            onResponse: (status, body, state) => {
              if (status === 200) latest[state.owner] = JSON.parse(body).data.document;
              // A write of the previous call still in flight when it ended may land after its
              // reply was dropped: go on from the stored version, as a client would.
              else if (status === 409) latest[state.owner] = JSON.parse(body).current ?? latest[state.owner];
            },
          },
        ],
      },
      () => ({ owner: owners++ }),
    );
    return { ...summarise(result), unit: 'writes/s' };
  };
  return [
    ['read agent', cannonScenario({ url: at(readPath), headers: auth })],
    ['list agents', cannonScenario({ url: at('/api/build/agents'), headers: auth })],
    ['validate agent', cannonScenario({ url: at('/api/build/agents/validate'), method: 'POST', headers: { ...json }, body: JSON.stringify(draft) })],
    // Each connection owns one agent and carries its stamp from write to write (across rounds too).
    ['replace agent (durable write)', replaceScenario(Math.min(CONNECTIONS, agents.length))],
    // One client writing one agent, each write after the last one's reply: a write's whole latency
    // (its fsync included), the row issue 41 quotes against a bare fsync'd SQLite write.
    ['replace agent, one connection (sequential durable write)', replaceScenario(1)],
    [
      // Each connection starts a run, polls it until it ends, and starts the next.
      'workflow test run, 3 steps, created and polled to its end',
      async (seconds) => {
        const latencies = [];
        let failed = 0;
        let polls = 0;
        await statefulCannon(
          {
            url: everyReplica,
            duration: seconds,
            requests: [
              {
                setupRequest: (req, state) =>
                  state.runId
                    ? { ...req, method: 'GET', path: `/api/build/workflow-runs/${state.runId}`, headers: auth, body: undefined }
                    : { ...req, method: 'POST', path: '/api/build/workflows/bench-run/test', headers: { ...json }, body: '{"input":{}}' },
                onResponse: (status, body, state) => {
                  const data = status < 300 ? JSON.parse(body).data : null;
                  if (state.runId) polls++;
                  if (!state.runId) {
                    if (status === 202) Object.assign(state, { runId: data.run_id, started: performance.now() });
                    else failed++;
                  } else if (status !== 200 || !['queued', 'running'].includes(data.status)) {
                    if (data?.status === 'succeeded') latencies.push(performance.now() - state.started);
                    else failed++;
                    state.runId = null;
                  }
                },
              },
            ],
          },
          () => ({ runId: null }),
        );
        latencies.sort((a, b) => a - b);
        return {
          rps: latencies.length / seconds,
          count: latencies.length,
          p50: percentile(latencies, 0.5),
          p99: percentile(latencies, 0.99),
          non2xx: failed,
          unit: 'executions/s',
          detail: `${(polls / Math.max(1, latencies.length)).toFixed(1)} polls per execution`,
        };
      },
    ],
    [MIX_NAME, async (seconds) => mixScenario(service, { agentDocument, workflowDocument })(seconds)],
    // What the two HTTP requests of a workflow execution cost without the run: the floor under it.
    [
      'run floor: POST test of a disabled workflow (409, nothing queued)',
      cannonScenario({ url: at('/api/build/workflows/bench-off/test'), method: 'POST', headers: { ...json }, body: '{"input":{}}' }, 409),
    ],
    ['run floor: GET of a finished run', cannonScenario({ url: at(`/api/build/workflow-runs/${service.finishedRunId}`), headers: auth })],
    ['401 path (no token)', cannonScenario({ url: at('/api/build/agents') }, 401)],
    [
      `list runs: first page (${LISTED_RUNS.toLocaleString('en-US')} runs in the workspace)`,
      cannonScenario({ url: at('/api/build/runs?limit=20'), headers: service.listAuth }),
    ],
    [
      'list runs: a page half-way down the cursor',
      cannonScenario({ url: at(`/api/build/runs?limit=20&cursor=${service.listed?.deepCursor}`), headers: service.listAuth }),
    ],
    [
      `list versions: first page (${KEPT_VERSIONS.toLocaleString('en-US')} versions of one agent)`,
      cannonScenario({ url: at('/api/build/agents/bench-versioned/versions?limit=20'), headers: auth }),
    ],
    // The cursor of the page after version KEPT_VERSIONS / 2 + 1 (services/versions.ts writes it so).
    [
      'list versions: a page half-way down the cursor',
      cannonScenario({
        url: at(
          `/api/build/agents/bench-versioned/versions?limit=20&cursor=${Buffer.from(JSON.stringify({ v: KEPT_VERSIONS / 2 + 1 })).toString('base64url')}`,
        ),
        headers: auth,
      }),
    ],
    [
      // Pages a repeated read finds held (the two rows above) against pages read once: each connection
      // walks the whole list by its next_cursor with a limit of its own (10 to 30, 20 on average), so
      // the pages walked outnumber what the held pages' budget keeps and almost every page is built.
      'list versions: cursor walks, each page read once (limits 10–30)',
      async (seconds) => {
        let walker = 0;
        const result = await statefulCannon(
          {
            url: everyReplica,
            duration: seconds,
            requests: [
              {
                setupRequest: (req, state) => ({
                  ...req,
                  method: 'GET',
                  path: `/api/build/agents/bench-versioned/versions?limit=${state.limit}${state.cursor ? `&cursor=${state.cursor}` : ''}`,
                  headers: auth,
                  body: undefined,
                }),
                onResponse: (status, body, state) => {
                  state.cursor = status === 200 ? JSON.parse(body).next_cursor : null;
                },
              },
            ],
          },
          () => ({ limit: 10 + (walker++ % 21), cursor: null }),
        );
        return { ...summarise(result), unit: 'req/s' };
      },
    ],
    [
      // One run parks at each of its 39 kv.set calls; each approval is a state change that every
      // stream must see: the latency is from the approval's reply to each stream seeing `approval.decided`.
      `event fan-out: ${STREAMS.toLocaleString('en-US')} streams on one run, change to last stream`,
      async (seconds) => {
        const agent = await fanOutAgent(service);
        const prompt = Array.from({ length: 39 }, (_, i) => `/call kv.set {"key":"fan-${i}","value":${i}}`).join('\n');
        const runId = (await service.api('POST', `/api/build/agents/${agent}/test`, { prompt })).body.data.run_id;
        // Spread over the replicas: a stream on one that does not execute the run hears of it by NOTIFY.
        const { streams, sees, close } = openStreams(
          service.urls.map((u) => `${u}/api/build/runs/${runId}/events`),
          auth,
          STREAMS,
        );
        const latencies = [];
        const lastOfChange = [];
        try {
          const deadline = performance.now() + seconds * 1000;
          for (let call = 1; call <= 39 && performance.now() < deadline; call++) {
            const parked = (e) => e.type === 'run.awaiting_approval' && e.data.calls.some((c) => c.id === `call_${call}`);
            await Promise.all(streams.map((s) => sees(s, parked)));
            const decidedAt = performance.now();
            await service.api('POST', `/api/build/runs/${runId}/approvals/call_${call}`, { decision: 'approve' });
            const decided = (e) => e.type === 'approval.decided' && e.data.call_id === `call_${call}`;
            const seenAt = await Promise.all(streams.map((s) => sees(s, decided)));
            for (const at of seenAt) latencies.push(at - decidedAt);
            lastOfChange.push(Math.max(...seenAt) - decidedAt);
          }
        } finally {
          close();
          await service.api('POST', `/api/build/runs/${runId}/cancel`).catch(() => undefined);
        }
        latencies.sort((a, b) => a - b);
        lastOfChange.sort((a, b) => a - b);
        // Throughput: events delivered per second while changes were being fanned out.
        return {
          rps: latencies.length / (lastOfChange.reduce((a, b) => a + b, 0) / 1000 || 1),
          count: latencies.length,
          p50: percentile(lastOfChange, 0.5),
          p99: percentile(lastOfChange, 0.99),
          non2xx: 0,
          unit: 'deliveries/s',
        };
      },
    ],
  ].filter(([name]) => selected(name));
}

/** An agent whose every write waits for approval, for the fan-out scenario (made once per service). */
async function fanOutAgent(service) {
  if (!service.fanOutAgentSlug) {
    const doc = {
      ...agentDocument(AGENTS + 1),
      slug: 'bench-fan-out',
      max_steps: 40,
      triggers: [],
      schedule: {},
      tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'write' },
    };
    service.fanOutAgentSlug = (await service.api('PUT', '/api/build/agents', doc)).body.data.document.slug;
  }
  return service.fanOutAgentSlug;
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-'));
  const service = await startService(root, dataDir);
  const agentSize = Buffer.byteLength(JSON.stringify(service.agents[0]));

  // Baselines answer the bytes of the read-agent response.
  const bodyFile = path.join(dataDir, 'baseline-body.json');
  fs.writeFileSync(bodyFile, service.readBytes);
  const baseline = async (mode) => {
    const server = await startProcess([path.join(__dirname, 'bench-baseline.js'), mode, bodyFile], {}, (line) => JSON.parse(line).port);
    const read = async (seconds) => summarise(await cannon({ url: `${server.url}${service.readPath}`, duration: seconds }));
    return { server, measure: (warm, seconds) => measure(server.child.pid, read, warm, seconds) };
  };
  const once = async (mode, name) => {
    const server = await baseline(mode);
    try {
      const { result, peakRss, cpuPerOp } = await server.measure(true);
      return { name, ...result, peakRss, cpuPerOp, unit: 'req/s', baseline: mode };
    } finally {
      server.server.child.kill('SIGTERM');
    }
  };
  let http, prototypes, express;
  const rows = [];
  const expressRuns = [];
  try {
    http = await once('http', 'baseline: bare node:http');
    prototypes = await once('express-prototypes', "baseline: bare express on the service's server (requests built with the app's prototypes)");
    // The express baseline brackets every scenario: measured before the first, then after each, and
    // each scenario is compared with the mean of the two measurements around it, so a machine whose
    // speed drifts during the run moves a scenario and its baseline alike.
    express = await baseline('express');
    expressRuns.push(await express.measure(true, BRACKET_SECONDS));
    for (const [name, run] of scenariosOf(service)) {
      const { result, peakRss, cpuPerOp } = await measure(service.child.pid, run);
      await settled(service.child.pid); // runs and fsyncs still in flight would slow the baseline
      expressRuns.push(await express.measure(false, BRACKET_SECONDS));
      const around = expressRuns.slice(-2).map((m) => m.result.rps);
      rows.push({ name, ...result, peakRss, cpuPerOp, expressRps: (around[0] + around[1]) / 2 });
    }
  } finally {
    express?.server.child.kill('SIGTERM');
    await service.stop();
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
  report([http, expressRow(expressRuns), prototypes, ...rows], agentSize);
}

/**
 * The scenarios on each store of STORES, side by side: every scenario is measured on the stores in
 * turn (so a machine whose speed drifts moves them alike), with the CPU the database server spent
 * per operation beside the service's. PostgreSQL runs as a deployment would (fsync on, durable
 * commits), on this machine, over loopback; each store gets a fresh, equally seeded database.
 */
async function compareStores() {
  const cluster = STORES.some((st) => st.kind === 'postgres') ? await startCluster({ durable: true }) : null;
  const dirs = [];
  const services = [];
  try {
    for (const [i, store] of STORES.entries()) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-store-'));
      dirs.push(dir);
      const url = store.kind === 'postgres' ? await createDatabase(cluster.url, `bench_${i}`) : null;
      services.push(await startService(root, dir, url, store.replicas));
    }
    const databaseCpu = cluster && (() => clusterCpu(cluster.dir));
    const scenarios = services.map(scenariosOf);
    const rows = [];
    for (let sc = 0; sc < scenarios[0].length; sc++) {
      const row = { name: scenarios[0][sc][0], results: [] };
      for (const [i, service] of services.entries()) {
        const measured = await measure(service.pids, scenarios[i][sc][1], true, SECONDS, STORES[i].kind === 'postgres' ? databaseCpu : null);
        await settled(service.pids[0]);
        row.results.push({ ...measured.result, cpuPerOp: measured.cpuPerOp, databaseCpuPerOp: measured.databaseCpuPerOp, peakRss: measured.peakRss });
      }
      rows.push(row);
      console.log(`${row.name}: ${row.results.map((r, i) => `${STORES[i].name} ${Math.round(r.rps)} ${r.unit}`).join(' | ')}`);
    }
    return rows;
  } finally {
    for (const service of services) await service.stop();
    await cluster?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates database `name` on the cluster at `serverUrl`; its URL. */
async function createDatabase(serverUrl, name) {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * CPU seconds the PostgreSQL cluster in `dir` has used: its postmaster (with the children it has
 * reaped) and every process it started (backends, WAL writer, checkpointer, …).
 */
function clusterCpu(dir) {
  const postmaster = Number(fs.readFileSync(path.join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fields;
    try {
      fields = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
    } catch {
      continue; // gone meanwhile
    }
    const pid = Number(entry);
    if (pid !== postmaster && Number(fields[1]) !== postmaster) continue;
    total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
  }
  return total;
}

/** The side-by-side table, with each PostgreSQL shape's throughput as a share of the one before it. */
function storesReport(rows) {
  const fmt = (n) => (n === undefined || Number.isNaN(n) ? '–' : Math.round(n).toLocaleString('en-US'));
  const cell = (r) =>
    `${fmt(r.rps)} ${r.unit}; ${fmt(r.cpuPerOp)}${r.databaseCpuPerOp === undefined ? '' : ` + ${fmt(r.databaseCpuPerOp)}`} µs; p99 ${r.p99 === undefined ? '–' : r.p99.toFixed(1)} ms${r.non2xx && !r.expected ? `; ${r.non2xx} non-2xx` : ''}${r.detail ? ` (${r.detail})` : ''}`;
  const ratios = STORES.slice(1).map((st, i) => `${st.name} ÷ ${STORES[i].name}`);
  const table = [
    `| scenario | ${STORES.map((st) => st.name).join(' | ')} | ${ratios.join(' | ')} |`,
    `|---|${STORES.map(() => '---').join('|')}|${ratios.map(() => '---').join('|')}|`,
    ...rows.map(
      (row) =>
        `| ${row.name} | ${row.results.map(cell).join(' | ')} | ${row.results
          .slice(1)
          .map((r, i) => `${((100 * r.rps) / row.results[i].rps).toFixed(0)}%`)
          .join(' | ')} |`,
    ),
  ].join('\n');
  console.log(table);
  if (SMOKE || ONLY) return;
  const doc = path.join(root, 'docs', 'benchmarks.md');
  const text = fs.readFileSync(doc, 'utf8');
  const cpu = os.cpus()[0];
  const results = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu.model} × ${os.cpus().length} cores (service replicas, PostgreSQL and the load generator share them), ${SECONDS} s per scenario after ${WARMUP_SECONDS} s of warm-up, ${CONNECTIONS} connections spread over the replicas.`,
    'Each cell: throughput; server CPU per operation — the service (all replicas together) + the PostgreSQL server — in µs; p99 latency.',
    '',
    table,
  ].join('\n');
  const block = `<!-- bench-stores:start -->\n${results}\n<!-- bench-stores:end -->`;
  fs.writeFileSync(
    doc,
    text.includes('<!-- bench-stores:start -->')
      ? text.replace(/<!-- bench-stores:start -->[\s\S]*<!-- bench-stores:end -->/, block)
      : `${text.trimEnd()}\n\n${block}\n`,
  );
  console.log(`updated ${path.relative(root, doc)} (stores)`);
}

/** Resolves once process `pid` has used under 5 % of a core for 200 ms (at most 5 s: a busy service is measured anyway). */
async function settled(pid) {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    const before = cpuOf(pid);
    await new Promise((resolve) => setTimeout(resolve, 200));
    if (cpuOf(pid) - before < 0.01) return;
  }
}

/** The express baseline's row: the figures of its median measurement, its peak RSS over all, and the spread of its requests/s. */
function expressRow(runs) {
  const sorted = [...runs].sort((a, b) => a.result.rps - b.result.rps);
  const { result, cpuPerOp } = sorted[Math.floor(sorted.length / 2)];
  const spread = { runs: runs.length, low: sorted[0].result.rps, high: sorted[sorted.length - 1].result.rps };
  return { name: 'baseline: bare express', ...result, peakRss: Math.max(...runs.map((m) => m.peakRss)), cpuPerOp, unit: 'req/s', spread, baseline: 'express' };
}

/**
 * --against <checkout>: the service built there (A) and this one (B), both running, measured in
 * alternating rounds per scenario so that a noisy machine moves both alike. Each round gives B's
 * rate and its CPU per operation (each service's own process.cpuUsage(): bench-probe.js) as
 * ratios to A's in that round; the read and the 401 are also measured against bare node:http
 * answering the read's bytes in the same rounds, the ratio the issues quote. Prints each ratio's
 * median and spread (lowest–highest), then (--startup) the start-up times, then the table for
 * docs/benchmarks.md. On PostgreSQL, the database's CPU per operation beside the service's.
 */
async function compare(otherRoot) {
  // The first of --stores: `--stores postgres` compares the two on PostgreSQL (a database each on
  // one throwaway cluster), otherwise on SQLite files.
  const store = STORES[0] ?? { name: 'SQLite', kind: 'sqlite', replicas: 1 };
  const cluster = store.kind === 'postgres' ? await startCluster({ durable: true }) : null;
  const dirs = [fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-a-')), fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-b-'))];
  const urls = cluster ? [await createDatabase(cluster.url, 'bench_a'), await createDatabase(cluster.url, 'bench_b')] : [null, null];
  const services = [await startService(otherRoot, dirs[0], urls[0], store.replicas), await startService(root, dirs[1], urls[1], store.replicas)];
  const scenarios = services.map(scenariosOf);
  const databaseCpu = cluster && (() => clusterCpu(cluster.dir));
  // Bare node:http answering the read's bytes (A's: both answer the same document).
  const bodyFile = path.join(dirs[0], 'baseline-body.json');
  fs.writeFileSync(bodyFile, services[0].readBytes);
  const bare = await startProcess([path.join(__dirname, 'bench-baseline.js'), 'http', bodyFile], {}, (line) => JSON.parse(line).port);
  const bareRead = async (seconds) => summarise(await cannon({ url: `${bare.url}${services[0].readPath}`, duration: seconds }));
  const rows = [];
  console.log(`A: ${otherRoot}  B: ${root}  store: ${store.name}; ${ROUNDS} rounds of ${SECONDS} s`);
  try {
    for (let s = 0; s < scenarios[0].length; s++) {
      const name = scenarios[0][s][0];
      const withBare = name.startsWith('read agent') || name.startsWith('401');
      const sides = { a: [], b: [], http: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? ['b', 'a'] : ['a', 'b'];
        if (withBare) order.splice(round % 3, 0, 'http');
        for (const side of order) {
          if (side === 'http') {
            const { result } = await measure(bare.child.pid, bareRead, round === 0);
            sides.http.push({ rps: result.rps });
            continue;
          }
          const i = side === 'a' ? 0 : 1;
          const [service, run] = [services[i], scenarios[i][s][1]];
          if (round === 0 && WARMUP_SECONDS) await run(WARMUP_SECONDS);
          const cpuBefore = await cpuMicrosOf(service.children);
          const databaseBefore = databaseCpu?.();
          const result = await run(SECONDS);
          const ops = Math.max(1, result.count);
          sides[side].push({
            rps: result.rps,
            cpuPerOp: ((await cpuMicrosOf(service.children)) - cpuBefore) / ops,
            ...(databaseCpu && { databaseCpuPerOp: (1e6 * (databaseCpu() - databaseBefore)) / ops }),
            non2xx: result.non2xx,
            expected: result.expected,
          });
          await settled(service.pids[0]); // runs and fsyncs still in flight would slow the other side
        }
      }
      const row = compareRow(name, sides);
      rows.push(row);
      console.log(compareLine(row));
    }
    if (values.startup) rows.startup = await startupTimes(otherRoot);
  } finally {
    bare.child.kill('SIGTERM');
    for (const service of services) await service.stop();
    await cluster?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n${compareTable(rows, otherRoot, store)}`);
}

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
/** A list's median with its spread: `1.02 (0.97–1.06)`. */
const spreadOf = (xs, digits = 2) => {
  const sorted = [...xs].sort((x, y) => x - y);
  const f = (n) => n.toFixed(digits);
  return `${f(median(sorted))} (${f(sorted[0])}–${f(sorted[sorted.length - 1])})`;
};

/** A scenario's rounds as ratios: each round's B over that round's A, and each side over bare node:http. */
function compareRow(name, { a, b, http }) {
  const per = (side, key) => side.map((m) => m[key]);
  const ratios = (key) => b.map((m, i) => m[key] / a[i][key]);
  const ofHttp = (side) => (http.length ? side.map((m, i) => m.rps / http[i].rps) : null);
  const unexpected = [...a, ...b].reduce((n, m) => n + (m.expected ? 0 : m.non2xx), 0);
  return {
    name,
    rateRatio: ratios('rps'),
    cpuRatio: ratios('cpuPerOp'),
    cpuA: per(a, 'cpuPerOp'),
    cpuB: per(b, 'cpuPerOp'),
    rpsA: per(a, 'rps'),
    rpsB: per(b, 'rps'),
    httpA: ofHttp(a),
    httpB: ofHttp(b),
    databaseA: a[0].databaseCpuPerOp === undefined ? null : per(a, 'databaseCpuPerOp'),
    databaseB: b[0].databaseCpuPerOp === undefined ? null : per(b, 'databaseCpuPerOp'),
    unexpected,
  };
}

function compareLine(row) {
  const lines = [
    `${row.name}`,
    `  rate B/A ${spreadOf(row.rateRatio)}; CPU/op B/A ${spreadOf(row.cpuRatio)}; CPU µs/op A ${spreadOf(row.cpuA, 0)}, B ${spreadOf(row.cpuB, 0)}; rate A ${Math.round(median(row.rpsA))}/s, B ${Math.round(median(row.rpsB))}/s`,
  ];
  if (row.httpA) lines.push(`  × bare node:http: A ${spreadOf(row.httpA)}, B ${spreadOf(row.httpB)}`);
  if (row.databaseA) lines.push(`  database CPU µs/op A ${spreadOf(row.databaseA, 0)}, B ${spreadOf(row.databaseB, 0)}`);
  if (row.unexpected) lines.push(`  ${row.unexpected} responses with an unexpected status`);
  return lines.join('\n');
}

/** How long from spawning the server to its first /healthz 200, on a new data directory each time (ms). */
async function timeToHealthy(command, args, cwd, env) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-start-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command, args, {
    cwd,
    stdio: 'ignore',
    detached: true,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: '',
      DRAIN_SECONDS: '0',
      DATABASE_PATH: path.join(dataDir, 'build.db'),
      PUBLIC_BASE_URL,
      ...env,
    },
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return performance.now() - started;
      if (performance.now() - started > 60_000) throw new Error(`${command} ${args.join(' ')}: no /healthz within 60 s`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid, 'SIGTERM'); // npm and the server it started
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The server process's start-up, and `npm start`'s on a checkout whose build is current, for A and B in alternating rounds. */
async function startupTimes(otherRoot) {
  const roots = { a: otherRoot, b: root };
  const times = { server: { a: [], b: [] }, npmStart: { a: [], b: [] } };
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 ? ['b', 'a'] : ['a', 'b']) {
      times.server[side].push(await timeToHealthy(process.execPath, [path.join(roots[side], 'bin', 'build-api.js'), 'serve'], roots[side]));
      times.npmStart[side].push(await timeToHealthy('npm', ['start'], roots[side]));
    }
  }
  const ms = (xs) => spreadOf(xs, 0);
  console.log(
    `start-up, ms to the first /healthz 200 on a new data directory: server process A ${ms(times.server.a)}, B ${ms(times.server.b)}; npm start A ${ms(times.npmStart.a)}, B ${ms(times.npmStart.b)}`,
  );
  return times;
}

/** The comparison as docs/benchmarks.md keeps it, one table per issue. */
function compareTable(rows, otherRoot, store) {
  const cpu = os.cpus()[0];
  const ref = (dir) => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    } catch {
      return path.basename(dir);
    }
  };
  const lines = [
    `A = ${ref(otherRoot)}, B = ${ref(root)}; ${store.name}; ${ROUNDS} alternating rounds of ${SECONDS} s, ${CONNECTIONS} connections, on ${cpu.model} × ${os.cpus().length}, node ${process.version}. Each figure: median (lowest–highest) of the rounds; B/A is each round's B over that round's A; CPU is each service's own process.cpuUsage() per operation.`,
    '',
    '| path | rate B/A | CPU per op B/A | CPU µs/op A | CPU µs/op B | A × bare node:http | B × bare node:http |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${spreadOf(r.rateRatio)} | ${spreadOf(r.cpuRatio)} | ${spreadOf(r.cpuA, 0)} | ${spreadOf(r.cpuB, 0)} | ${r.httpA ? spreadOf(r.httpA) : '–'} | ${r.httpB ? spreadOf(r.httpB) : '–'} |`,
    ),
  ];
  const t = rows.startup;
  if (t)
    lines.push(
      `| start-up: server process to /healthz, ms | | | ${spreadOf(t.server.a, 0)} | ${spreadOf(t.server.b, 0)} | | |`,
      `| start-up: npm start to /healthz (build current), ms | | | ${spreadOf(t.npmStart.a, 0)} | ${spreadOf(t.npmStart.b, 0)} | | |`,
    );
  return lines.join('\n');
}

/** The non-2xx column: a scenario that expects a status says whether every response had it. */
function statusNote(row) {
  if (!row.expected) return row.non2xx.toLocaleString('en-US');
  const others = Object.entries(row.statuses ?? {}).filter(([code]) => Number(code) !== row.expected);
  return others.length
    ? `${row.non2xx.toLocaleString('en-US')} (${others.map(([code, n]) => `${n} × ${code}`).join(', ')} besides the expected ${row.expected})`
    : `(all ${row.expected}, expected)`;
}

/** How the express baseline was measured, and how much it moved during the run. */
function bracketNote({ spread }) {
  const rps = (n) => Math.round(n).toLocaleString('en-US');
  return `The express baseline was measured ${spread.runs} times (${BRACKET_SECONDS} s each): before the first scenario and after each one; its row shows the median, and each scenario's "vs express" is to the mean of the two measurements around it. It served ${rps(spread.low)}–${rps(spread.high)} req/s during this run.`;
}

function report(rows, agentSize) {
  const baseline = (mode) => rows.find((r) => r.baseline === mode);
  const http = baseline('http').rps;
  const express = baseline('express');
  const prototypes = baseline('express-prototypes')?.rps;
  /** A scenario's requests/s as a share of express's measured around it (the baselines' rows: of its median). */
  const ofExpress = (row) => (100 * row.rps) / (row.expressRps ?? express.rps);
  const fmt = (n, d = 0) => (n === undefined ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }));
  const table = [
    "| scenario | throughput | p50 ms | p99 ms | peak RSS MB | server CPU µs/op | vs node:http | vs express | vs express on the service's server | non-2xx |",
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.rps)} ${r.unit} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.peakRss)} | ${fmt(r.cpuPerOp)} | ${fmt((100 * r.rps) / http)}% | ${fmt(ofExpress(r))}% | ${fmt((100 * r.rps) / prototypes)}% | ${statusNote(r)} |`,
    ),
  ].join('\n');
  console.log(`${table}\n${bracketNote(express)}`);
  const find = (prefix) => rows.find((r) => r.name.startsWith(prefix));
  const targets = [
    ['read agent', 'read agent ≥ 70% of bare express, p99 < 10 ms', (r) => ofExpress(r) >= 70 && r.p99 < 10],
    ['401', '401 path ≥ 80% of bare express', (r) => ofExpress(r) >= 80],
    ['validate', 'validate agent ≥ 40% of bare express', (r) => ofExpress(r) >= 40],
    ['replace', 'durable replace ≥ 2,000 writes/s', (r) => r.rps >= 2000],
    ['workflow test run', 'workflow test runs ≥ 2,000 executions/s', (r) => r.rps >= 2000],
    // "A read" of what a list shows: one run (GET /api/build/runs/{id}, the run floor's read).
    ['list runs: first', "run list's first page ≤ 2× a run read's server CPU/op", (r) => r.cpuPerOp <= 2 * find('run floor: GET').cpuPerOp],
    ['list runs: a page half-way', "run list's deep page ≤ 2× a run read's server CPU/op", (r) => r.cpuPerOp <= 2 * find('run floor: GET').cpuPerOp],
    ['list versions: first', "version list's first page ≤ 2× an agent read's server CPU/op", (r) => r.cpuPerOp <= 2 * find('read agent').cpuPerOp],
    ['list versions: a page half-way', "version list's deep page ≤ 2× an agent read's server CPU/op", (r) => r.cpuPerOp <= 2 * find('read agent').cpuPerOp],
    ['list versions: cursor walks', "version list's pages read once ≤ 2× an agent read's server CPU/op", (r) => r.cpuPerOp <= 2 * find('read agent').cpuPerOp],
  ]
    .filter(
      ([prefix]) => find(prefix) && (!prefix.startsWith('list runs') || find('run floor: GET')) && (!prefix.startsWith('list versions') || find('read agent')),
    )
    .map(([prefix, target, met]) => [target, met(find(prefix))]);
  const scenarioRss = rows.filter((r) => !r.baseline).map((r) => r.peakRss);
  if (scenarioRss.length) targets.push(['peak RSS < 250 MB', Math.max(...scenarioRss) < 250]);
  console.log(targets.map(([t, ok]) => `${ok ? 'met' : 'NOT met'}: ${t}`).join('\n'));
  if (SMOKE || ONLY) return;
  const cpu = os.cpus()[0];
  const doc = path.join(root, 'docs', 'benchmarks.md');
  const text = fs.readFileSync(doc, 'utf8');
  const results = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu.model} × ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, node ${process.version}.`,
    `${SECONDS} s per scenario, ${CONNECTIONS} connections, loopback, load generator on the same machine. Agent documents are ${(agentSize / 1024).toFixed(1)} KiB.`,
    bracketNote(express),
    '',
    table,
    '',
    '| target | status |',
    '|---|---|',
    ...targets.map(([t, ok]) => `| ${t} | ${ok ? 'met' : '**not met**'} |`),
  ].join('\n');
  fs.writeFileSync(doc, text.replace(/<!-- bench:start -->[\s\S]*<!-- bench:end -->/, `<!-- bench:start -->\n${results}\n<!-- bench:end -->`));
  console.log(`updated ${path.relative(root, doc)}`);
}

async function all() {
  await main();
  if (STORES.length) storesReport(await compareStores());
}

(AGAINST ? compare(path.resolve(AGAINST)) : all()).catch((err) => {
  console.error(err);
  process.exit(1);
});
