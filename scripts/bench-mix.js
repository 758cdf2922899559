// The bench's realistic mix (scripts/bench.js): many workspaces, agents and callers at once, each
// caller doing what integrators do — mostly reads of agents, some lists, replaces of its own agent
// (a durable write carrying its stamp), and runs of a 3-step workflow followed on their event stream
// to their end (not polled). One row in the stores' table: operations/s of the whole mix, with each
// kind's rate and p99 beside it.
const http = require('node:http');

const WORKSPACES = 8;
const AGENTS_PER_WORKSPACE = 25;
const CALLERS_PER_WORKSPACE = 4; // 32 callers, one token each
/** Of every 20 operations of a caller: 12 reads, 2 lists, 3 replaces, 3 runs. */
const PLAN = [...Array(12).fill('read'), 'list', 'list', 'replace', 'replace', 'replace', 'run', 'run', 'run'];

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/** One request on the caller's keep-alive agent: its status and parsed body. */
function request(agent, base, method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Follows a run's event stream until its final event; whether the run succeeded. */
function followToEnd(base, runId, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/build/workflow-runs/${runId}/events`, { headers: { ...headers, accept: 'text/event-stream' }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return resolve(false);
      }
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buffer += chunk;
        for (let end; (end = buffer.indexOf('\n\n')) >= 0; ) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6));
          if (event.type === 'run.finished') {
            req.destroy();
            resolve(event.data.status === 'succeeded');
          }
        }
      });
      res.on('end', () => resolve(false));
    });
    req.on('error', reject);
  });
}

/** Seeds the mix's workspaces on `service` (once): agents, a 3-step workflow and a token per caller. */
async function seedMix(service, { agentDocument, workflowDocument }) {
  if (service.mix) return service.mix;
  const callers = [];
  for (let w = 0; w < WORKSPACES; w++) {
    const workspace = `mix-${w}`;
    const tokens = Array.from({ length: CALLERS_PER_WORKSPACE }, (_, c) =>
      service.issuer.mint({ sub: `mix-caller-${w}-${c}`, audience: 'build-api', claims: { workspace, scope: 'build' }, ttlSeconds: 86400 }),
    );
    const json = { authorization: `Bearer ${tokens[0]}`, 'content-type': 'application/json' };
    const agents = [];
    for (let i = 0; i < AGENTS_PER_WORKSPACE; i++) agents.push((await service.api('PUT', '/api/build/agents', agentDocument(i), json)).body.data.document);
    await service.api('PUT', '/api/build/workflows', workflowDocument('mix-run', 3), json);
    for (const [c, token] of tokens.entries()) callers.push({ token, agents, own: agents[c], workspace });
  }
  service.mix = callers;
  return callers;
}

/** The mix as a bench scenario: a function of its duration in seconds. */
function mixScenario(service, documents) {
  return async (seconds) => {
    const callers = await seedMix(service, documents);
    const kinds = { read: [], list: [], replace: [], run: [] };
    let failed = 0;
    const deadline = performance.now() + seconds * 1000;
    await Promise.all(
      callers.map(async (caller, i) => {
        const base = service.urls[i % service.urls.length];
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const auth = { authorization: `Bearer ${caller.token}` };
        const json = { ...auth, 'content-type': 'application/json' };
        try {
          for (let n = i; performance.now() < deadline; n++) {
            const kind = PLAN[n % PLAN.length];
            const started = performance.now();
            let ok;
            if (kind === 'read') {
              const target = caller.agents[n % caller.agents.length];
              ok = (await request(agent, base, 'GET', `/api/build/agents/${target.id}`, auth)).status === 200;
            } else if (kind === 'list') {
              ok = (await request(agent, base, 'GET', '/api/build/agents', auth)).status === 200;
            } else if (kind === 'replace') {
              const doc = caller.own;
              const body = JSON.stringify({ ...doc, description: `mix write ${n}` });
              const res = await request(agent, base, 'PUT', `/api/build/agents/${doc.id}`, { ...json, 'if-match': `"${doc.updated_at}"` }, body);
              ok = res.status === 200;
              if (ok) caller.own = res.body.data.document;
              else if (res.status === 409) caller.own = res.body.current ?? caller.own;
            } else {
              const res = await request(agent, base, 'POST', '/api/build/workflows/mix-run/test', json, '{"input":{}}');
              ok = res.status === 202 && (await followToEnd(base, res.body.data.run_id, auth));
            }
            if (ok) kinds[kind].push(performance.now() - started);
            else failed++;
          }
        } finally {
          agent.destroy();
        }
      }),
    );
    const all = Object.values(kinds)
      .flat()
      .sort((a, b) => a - b);
    const detail = Object.entries(kinds)
      .map(([kind, latencies]) => {
        latencies.sort((a, b) => a - b);
        return `${kind}s ${Math.round(latencies.length / seconds).toLocaleString('en-US')}/s (p99 ${latencies.length ? percentile(latencies, 0.99).toFixed(0) : '–'} ms)`;
      })
      .join(', ');
    return { rps: all.length / seconds, count: all.length, p50: percentile(all, 0.5), p99: percentile(all, 0.99), non2xx: failed, unit: 'ops/s', detail };
  };
}

module.exports = {
  mixScenario,
  MIX_NAME: `realistic mix: ${WORKSPACES} workspaces × ${AGENTS_PER_WORKSPACE} agents, ${WORKSPACES * CALLERS_PER_WORKSPACE} callers; reads, lists, replaces, runs followed on their event stream`,
};
