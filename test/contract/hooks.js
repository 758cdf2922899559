// Dredd hooks for the contract test (scripts/contract-test.js). Dredd builds one transaction per
// documented status of every operation from openapi.yaml's examples; these hooks
//  - mint tokens with the server's embedded issuer (same data directory),
//  - carry ETags: replaces and status writes send the current stamp read just before,
//  - turn the request of each documented 4xx into one that provokes it (Dredd skips non-2xx by
//    default; every 4xx that a request can provoke is exercised here),
//  - validate every real reply (status, headers, body) against the spec with openapi-backend.
'use strict';
const crypto = require('node:crypto');
const http = require('node:http');
const hooks = require('hooks');
const { Webhook } = require('standardwebhooks');
const { localIssuerFromKey, openLocalIssuer } = require('../../dist/src/auth/local-issuer');
const { loadSpec } = require('../../dist/src/http/spec');
const { createContractValidator, contractViolation } = require('../../dist/src/http/openapi');

const baseUrl = process.env.CONTRACT_BASE_URL;
// The server's key: in the data directory with SQLite, handed over by contract-test.js with PostgreSQL (which keeps it in the database).
const issuer = process.env.CONTRACT_SIGNING_KEY
  ? localIssuerFromKey(process.env.CONTRACT_SIGNING_KEY, baseUrl)
  : openLocalIssuer(process.env.CONTRACT_DATA_DIR, baseUrl);
const mint = (scope = 'build') => issuer.mint({ sub: 'contract-user', audience: 'build-api', claims: { workspace: 'contract', scope }, ttlSeconds: 3600 });
const token = mint();
const validatorReady = createContractValidator(loadSpec());

// Run ids captured from the 202 of the test transactions, for the run reads that follow them.
const started = {};
const STALE = '"2020-01-01T00:00:00.000000Z"';
const exampleAgent = JSON.stringify(loadSpec().document.components.examples.AgentCreateRequestExample.value);

function parse(name) {
  const [path, summary, status] = name.split(' > ');
  return { path, summary, status: Number(status) };
}

async function current(kind, ref) {
  const res = await fetch(`${baseUrl}/api/build/${kind}/${ref}`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`could not read ${kind}/${ref}: ${res.status}`);
  return { etag: res.headers.get('etag'), doc: (await res.json()).data };
}

/** Dredd sends to `fullPath`; `request.uri` is what reports show. Keep both in step. */
function setUri(t, uri) {
  t.request.uri = uri;
  t.fullPath = uri;
}

const withRef = (uri, ref) => uri.replace(/\/(agents|workflows)\/[^/?]+/, `/$1/${ref}`);

/** Rewrites the request so the server answers the transaction's documented status. */
async function prepare(t) {
  const { summary, status } = parse(t.name);
  if (status === 304) return prepareNotModified(t);
  if (status === 406) return prepareNotAcceptable(t);
  if (summary.startsWith('Deliver webhook')) return prepareDelivery(t, status);
  if (summary === "Deliver an app's event") return prepareAppEvent(t, status);
  if (summary === "Answer Meta's subscription check") return prepareSubscriptionCheck(t, status);
  if (summary === "List an agent's channel messages") return prepareMessageList(t, status);
  if (status === 429 && !summary.startsWith('Follow')) return prepareQuotaSpent(t);
  if (summary.startsWith('List') && summary.endsWith('runs')) return prepareRunList(t, status);
  if (DOCUMENT_LISTS.has(summary) && (status === 200 || status === 400)) return prepareDocumentList(t, status);
  if (VERSIONED.test(summary)) return prepareVersions(t, summary, status);
  const req = t.request;
  // Idempotency-Key only where a transaction is about it (the 422s): a key shared by transactions would tie them together.
  for (const name of Object.keys(req.headers)) if (/^idempotency-key$/i.test(name)) delete req.headers[name];
  if (RUN_CONTROL.has(summary)) return prepareRunControl(t, summary, status);
  if (EVAL_OPERATIONS.has(summary) && status !== 422) return prepareEvals(t, summary, status);
  if (APP_OPERATIONS.has(summary) && status !== 422) return prepareApps(t, summary, status);
  if (EVENT_OPERATIONS.has(summary) && status !== 422) return prepareEventEndpoints(t, summary, status);
  if (SKILL_OPERATIONS.test(summary) && status !== 422) return prepareNamed(t, summary, status, 'skill');
  if (DATASET_OPERATIONS.test(summary) && status !== 422) return prepareNamed(t, summary, status, 'eval dataset');
  if (status === 422) return prepareKeyReuse(t, summary);
  req.headers.Authorization = `Bearer ${token}`;
  if (status >= 400) t.skip = false;

  switch (status) {
    case 401:
      delete req.headers.Authorization;
      return;
    case 403:
      req.headers.Authorization = `Bearer ${mint('read')}`;
      return;
    case 503: // needs an unreachable external issuer: covered by test/integration/auth.test.ts
      t.skip = true;
      return;
    case 413:
      req.body = JSON.stringify({ padding: 'x'.repeat(70 * 1024) });
      return;
    case 415:
      req.headers['Content-Type'] = 'text/plain';
      return;
    case 400:
      if (req.method === 'GET') setUri(t, req.uri.replace(/[0-9a-f-]{36}$/, 'not-a-uuid'));
      else req.body = summary === 'Test workflow' ? '{"input": 5}' : '{"unexpected": true}';
      if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
      return;
    case 404:
      setUri(t, summary === 'Read catalog app' ? req.uri.replace(/[^/]+$/, 'no-such-app') : withRef(req.uri, 'no-such-document'));
      if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
      return;
    case 428:
      delete req.headers['If-Match'];
      await carryStamp(t, summary);
      return;
    case 409:
      if (summary.startsWith('Create')) return; // the example's slug was created by the 201 transaction
      if (summary === 'Rotate webhook secret') return aimAtArchivedAgent(t, true);
      if (summary === 'Test agent') return aimAtArchivedAgent(t, false);
      if (summary === 'Test workflow') return aimAtDisabledWorkflow(t);
      await carryStamp(t, summary);
      req.headers['If-Match'] = STALE;
      return;
    default:
      if (summary === 'Rotate webhook secret') return aimAtWebhook(t, 'support-triage');
      if (summary === 'Delete workflow') return aimAtThrowawayWorkflow(t);
      if (summary === 'Read agent run') return setUri(t, t.request.uri.replace(/[0-9a-f-]{36}$/, started.agent));
      if (summary === 'Read workflow run') return setUri(t, t.request.uri.replace(/[0-9a-f-]{36}$/, started.workflow));
      await carryStamp(t, summary);
  }
}

// ---------------------------------------------------------------- conditional reads, negotiation
/** A read's 304: the request its 200 makes, with If-None-Match naming the ETag a read just got. */
async function prepareNotModified(t) {
  const name = t.name;
  t.name = name.replace(/ > 304$/, ' > 200');
  try {
    await prepare(t);
  } finally {
    t.name = name;
  }
  t.skip = false;
  const res = await fetch(`${baseUrl}${t.fullPath}`, { headers: { authorization: t.request.headers.Authorization } });
  if (res.status !== 200 || !res.headers.get('etag')) throw new Error(`${t.fullPath}: ${res.status}, ETag ${res.headers.get('etag')}`);
  t.request.headers['If-None-Match'] = res.headers.get('etag');
  delete t.expected.body;
  delete t.expected.bodySchema;
}

/** Any operation's 406: a request that accepts only XML (checked before the token, the body or the path's document). */
function prepareNotAcceptable(t) {
  t.skip = false;
  for (const name of Object.keys(t.request.headers)) if (/^(idempotency-key|accept)$/i.test(name)) delete t.request.headers[name];
  t.request.headers.Accept = 'application/xml';
  t.request.headers.Authorization = `Bearer ${token}`;
}

// ---------------------------------------------------------------- request quotas
// contract-test.js gives each caller RATE_LIMIT_CALLER requests per window: the transactions' own
// caller stays far below it, and a caller of its own spends it before each 429 transaction.
const spenderToken = issuer.mint({ sub: 'quota-spender', audience: 'build-api', claims: { workspace: 'contract', scope: 'build' }, ttlSeconds: 3600 });

/**
 * Sends requests as the spender until one is refused: its quota is then used up for this window
 * (spent once per window; a window that ends while it spends starts the count again).
 */
async function spendQuota() {
  const quota = Number(process.env.RATE_LIMIT_CALLER);
  for (let sent = 0; sent <= 3 * quota; sent += 100) {
    const statuses = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${baseUrl}/api/build/catalog`, { headers: { authorization: `Bearer ${spenderToken}` } }).then((res) => res.status),
      ),
    );
    if (statuses.includes(429)) return;
  }
  throw new Error('the caller quota never answered 429');
}

/** Any operation's 429: the spender's request, once its quota is used up. */
async function prepareQuotaSpent(t) {
  t.skip = false;
  for (const name of Object.keys(t.request.headers)) if (/^idempotency-key$/i.test(name)) delete t.request.headers[name];
  t.request.headers.Authorization = `Bearer ${spenderToken}`;
  if (t.expected.headers) delete t.expected.headers.Link;
  await spendQuota();
}

async function api(method, path, body, headers = {}) {
  const res = await fetch(`${baseUrl}/api/build${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return { etag: res.headers.get('etag'), data: (await res.json()).data };
}

/** Rotation names a trigger by id: use the agent's real webhook trigger. */
async function aimAtWebhook(t, ref) {
  const { doc } = await current('agents', ref);
  const hook = doc.triggers.find((tr) => tr.kind === 'webhook');
  setUri(t, withRef(t.request.uri, ref));
  t.request.body = JSON.stringify({ trigger_id: hook.id });
}

let archived;
/** An archived agent refuses test runs and webhook rotation: make one (once). */
async function aimAtArchivedAgent(t, rotate) {
  archived ??= api('PUT', '/agents', { ...JSON.parse(exampleAgent), slug: 'archived-agent' }).then((created) =>
    api('POST', '/agents/archived-agent/status', { status: 'archived' }, { 'If-Match': created.etag }),
  );
  await archived;
  if (rotate) await aimAtWebhook(t, 'archived-agent');
  else setUri(t, withRef(t.request.uri, 'archived-agent'));
}

const workflowExample = () => JSON.parse(JSON.stringify(loadSpec().document.components.examples.WorkflowCreateRequestExample.value));

/** A disabled workflow refuses test runs. */
async function aimAtDisabledWorkflow(t) {
  await api('PUT', '/workflows', { ...workflowExample(), slug: 'disabled-workflow', enabled: false });
  setUri(t, withRef(t.request.uri, 'disabled-workflow'));
}

/** Delete a workflow of its own, so the example workflow stays for the test transactions. */
async function aimAtThrowawayWorkflow(t) {
  await api('PUT', '/workflows', { ...workflowExample(), slug: 'throwaway' });
  setUri(t, withRef(t.request.uri, 'throwaway'));
}

/** Replaces and status writes: send the stored stamp (and, for replaces, the stored document with the example's edit). */
async function carryStamp(t, summary) {
  const req = t.request;
  if (!['Replace agent', 'Replace workflow', 'Set agent status'].includes(summary)) return;
  const kind = summary.endsWith('workflow') ? 'workflows' : 'agents';
  const ref = decodeURIComponent(req.uri.split('/')[4].split('?')[0]);
  const { etag, doc } = await current(kind, ref);
  if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = etag;
  if (summary.startsWith('Replace')) {
    const example = JSON.parse(req.body);
    req.body = JSON.stringify({ ...doc, name: example.name });
  }
}

// ---------------------------------------------------------------- document lists
const DOCUMENT_LISTS = new Set(['List agents', 'List workflows', 'List folders']);

/** A document list: the whole list (the example's cursor names a run list's position), or a limit out of range for the 400. */
function prepareDocumentList(t, status) {
  const path = t.request.uri.split('?')[0];
  t.request.headers.Authorization = `Bearer ${token}`;
  if (t.expected.headers) delete t.expected.headers.Link; // present only when a next page exists
  if (status === 200) return setUri(t, path);
  t.skip = false;
  setUri(t, `${path}?space=Not-A-Slug`);
}

// ---------------------------------------------------------------- run lists
/** A run list: the example's filters (they name a cursor of no run), or a malformed cursor for the 400. */
function prepareRunList(t, status) {
  const path = t.request.uri.split('?')[0];
  t.request.headers.Authorization = `Bearer ${token}`;
  // `Link` is present only when a next page exists; Dredd would expect every documented header.
  if (t.expected.headers) delete t.expected.headers.Link;
  if (status === 200) return setUri(t, `${path}?limit=2`);
  if (status === 400) return setUri(t, `${path}?cursor=not-a-cursor`);
  if (status === 401) delete t.request.headers.Authorization;
  if (status === 403) t.request.headers.Authorization = `Bearer ${mint('read')}`;
  if (status === 503) t.skip = true;
  if (status >= 400) t.skip = status === 503; // 503 needs an unreachable issuer (test/integration/auth.test.ts)
  setUri(t, path);
}

// ---------------------------------------------------------------- versions
const VERSIONED = /^(List|Read|Compare|Restore) (agent|workflow) versions?$/;

/**
 * A version operation on the example agent or workflow (written by the transactions before, so it
 * keeps versions 1 and 2): version 1, a malformed version or cursor for the 400, a document of no
 * one's for the 404; a restore carries the stored stamp (a stale one for the 409, none for the 428).
 */
async function prepareVersions(t, summary, status) {
  const req = t.request;
  const [, verb, noun] = VERSIONED.exec(summary);
  const kind = `${noun}s`;
  const ref = noun === 'agent' ? 'support-triage' : workflowExample().slug;
  req.headers.Authorization = `Bearer ${token}`;
  if (t.expected.headers) delete t.expected.headers.Link; // present only when a next page exists
  if (status >= 400) t.skip = status === 503; // 503 needs an unreachable issuer (test/integration/auth.test.ts)
  if (status === 401) delete req.headers.Authorization;
  if (status === 403) req.headers.Authorization = `Bearer ${mint('read')}`;
  const base = `/api/build/${kind}/${status === 404 ? 'no-such-document' : ref}/versions`;
  const version = status === 400 ? 'not-a-version' : '1';
  const uris = { List: `${base}?limit=1`, Read: `${base}/${version}`, Compare: `${base}/${version}/diff?to=current`, Restore: `${base}/${version}/restore` };
  setUri(t, status === 400 && verb === 'List' ? `${base}?cursor=not-a-cursor` : uris[verb]);
  if (verb !== 'Restore') return;
  if (status === 428) delete req.headers['If-Match'];
  else if (status === 409) req.headers['If-Match'] = STALE;
  else if (status === 200) req.headers['If-Match'] = (await current(kind, ref)).etag;
  else req.headers['If-Match'] = '*';
  if (noun === 'agent') setUri(t, `${t.request.uri}?force=true`);
}

// ---------------------------------------------------------------- run control
const RUN_CONTROL = new Set([
  'Cancel agent run',
  'Cancel workflow run',
  'Approve or reject a held tool call',
  'Follow agent run events',
  'Follow workflow run events',
]);

let controlAgent;
/** An agent whose writes wait for approval (a run of `/call kv.set …` parks), and that can sleep. */
function runControlAgent() {
  controlAgent ??= api('PUT', '/agents', {
    ...JSON.parse(exampleAgent),
    slug: 'run-control',
    max_steps: 10,
    tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval: 'write' },
  });
  return controlAgent;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a run of the run-control agent and waits until it is `until` (a status, or any final one). */
async function controlRun(prompt, until) {
  await runControlAgent();
  const { data } = await api('POST', '/agents/run-control/test', { prompt });
  return runBecomes(`/runs/${data.run_id}`, until);
}

const FINAL = ['succeeded', 'failed', 'cancelled', 'refused'];
/** Polls a run (its read path) until its status is `until` (or any final one, for 'final'); its id. */
async function runBecomes(readPath, until) {
  for (let i = 0; i < 500; i++) {
    const run = (await api('GET', readPath)).data;
    if (until === 'final' ? FINAL.includes(run.status) : run.status === until) return run.id;
    await sleep(10);
  }
  throw new Error(`${readPath} never became ${until}`);
}

const controlWorkflows = {};
/**
 * A run in the state wanted of a workflow whose steps sleep: `long` (one 2 s step: a cancel's wait of
 * 200 ms ends before it does, 202) or `short` (three 100 ms steps in a row: a cancel stops it within the wait, 200).
 */
async function workflowRun(until, kind = 'long') {
  const nap = (id, ms, after = []) => ({ id, kind: 'tool', tool: 'core.sleep', args: { ms }, after });
  const steps = kind === 'long' ? [nap('nap', 2000)] : [nap('a', 100), nap('b', 100, ['a']), nap('c', 100, ['b'])];
  controlWorkflows[kind] ??= api('PUT', '/workflows', { kind: 'service.workflow/v1', slug: `run-control-${kind}`, name: `Run control ${kind}`, steps });
  await controlWorkflows[kind];
  const { data } = await api('POST', `/workflows/run-control-${kind}/test`, {});
  return runBecomes(`/workflow-runs/${data.run_id}`, until);
}

const withRunId = (uri, runId) => uri.replace(/(runs\/)[^/]+/, `$1${runId}`);

async function prepareRunControl(t, summary, status) {
  const req = t.request;
  const agentRuns = !summary.includes('workflow');
  req.headers.Authorization = `Bearer ${token}`;
  if (status >= 400) t.skip = false;
  // These runs are made here, in other states than the examples show: the body is checked against
  // the schema (beforeEachValidation), not compared with the example.
  delete t.expected.body;
  delete t.expected.bodySchema;
  if (status === 401) return void delete req.headers.Authorization;
  if (status === 403) return void (req.headers.Authorization = `Bearer ${mint('read')}`);
  if (status === 503) return void (t.skip = true); // needs an unreachable issuer (test/integration/auth.test.ts)
  if (status === 400) return setUri(t, withRunId(req.uri, 'not-a-uuid'));
  if (status === 404) return setUri(t, withRunId(req.uri, '00000000-0000-4000-8000-000000000000'));
  if (summary.startsWith('Follow')) {
    // A finished run's stream replays its events and ends; the JSON alternative answers them at once.
    const runId = agentRuns ? await controlRun('hello', 'final') : await workflowRun('final');
    delete req.headers['Last-Event-ID']; // the whole stream, from the first event
    if (status === 204) req.headers['Last-Event-ID'] = '999999999'; // past the finished run's final event
    if (status === 429) await holdStreams(Number(process.env.EVENT_STREAMS_PER_CALLER));
    // The 200's two media types; the 204 and 429 are answers to a stream request.
    if (status === 200 && (t.expected.headers['Content-Type'] || '').includes('json')) req.headers.Accept = 'application/json';
    else req.headers.Accept = 'text/event-stream';
    return setUri(t, withRunId(req.uri, runId));
  }
  if (summary.startsWith('Cancel')) {
    let runId;
    if (status === 200) runId = agentRuns ? await controlRun('/call kv.set {"key":"c","value":1}', 'awaiting_approval') : await workflowRun('running', 'short');
    if (status === 202) runId = agentRuns ? await controlRun('/call core.sleep {"ms":2000}', 'running') : await workflowRun('running');
    if (status === 409) runId = agentRuns ? await controlRun('hello', 'final') : await workflowRun('final');
    if (status === 422) {
      const first = agentRuns ? await controlRun('hello', 'final') : await workflowRun('final');
      await fetch(`${baseUrl}/api/build/${agentRuns ? 'runs' : 'workflow-runs'}/${first}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': `reuse-${summary}` },
      });
      req.headers['Idempotency-Key'] = `reuse-${summary}`;
      runId = agentRuns ? await controlRun('hello', 'final') : await workflowRun('final'); // another path: 422
    }
    return setUri(t, withRunId(req.uri, runId));
  }
  // Approve or reject a held tool call.
  const runId = await controlRun('/call kv.set {"key":"a","value":1}', 'awaiting_approval');
  setUri(t, withRunId(req.uri, runId).replace(/approvals\/[^/?]+/, 'approvals/call_1'));
  if (status === 400) req.body = '{"decision": "maybe"}';
  if (status === 409) await api('POST', `/runs/${runId}/approvals/call_1`, { decision: 'reject' });
  if (status === 413) req.body = JSON.stringify({ decision: 'approve', note: 'x'.repeat(70 * 1024) });
  if (status === 415) req.headers['Content-Type'] = 'text/plain';
}

/** Streams held open (on a parked run) for a 429 transaction; closed after it. */
let heldStreams = [];
async function holdStreams(count) {
  const runId = await controlRun('/call kv.set {"key":"held","value":1}', 'awaiting_approval');
  heldStreams = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const req = http.get(
            `${baseUrl}/api/build/runs/${runId}/events`,
            { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } },
            (res) => {
              if (res.statusCode !== 200) reject(new Error(`a held stream was answered ${res.statusCode}`));
              else resolve(req);
            },
          );
          req.on('error', reject);
        }),
    ),
  );
}

/** The 422 of a create or test start: the key was used before for another body. */
async function prepareKeyReuse(t, summary) {
  const req = t.request;
  const key = `reuse-${summary}`;
  req.headers.Authorization = `Bearer ${token}`;
  t.skip = false;
  if (summary === 'Start an eval') await evalFixtures();
  const first =
    summary === 'Create agent'
      ? { ...JSON.parse(exampleAgent), slug: 'idempotent-agent' }
      : summary === 'Create workflow'
        ? { ...workflowExample(), slug: 'idempotent-workflow' }
        : summary === 'Test agent'
          ? { prompt: 'first' }
          : summary === 'Create skill'
            ? { ...skillExample(), name: 'idempotent-skill' }
            : summary === 'Create eval dataset'
              ? { ...example('EvalDatasetCreateRequestExample'), slug: 'idempotent-dataset' }
              : summary === 'Start an eval'
                ? { dataset: 'eval-contract-cases', repeats: 2 }
                : summary === 'Create app'
                  ? await appBody('idempotent-app')
                  : summary === 'Create connection'
                    ? { ref: 'idempotent', app: 'kv', label: null, credentials: { kind: 'none' } }
                    : { input: {} };
  const path = new URL(req.uri, baseUrl).pathname;
  const method = req.method;
  if (summary === 'Import skill') {
    // A SKILL.md of another skill first; the example's text with the same key is then 422.
    await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/markdown', 'idempotency-key': key },
      body: '---\nname: idempotent-import\ndescription: First.\n---\nBody.\n',
    });
    req.headers['Idempotency-Key'] = key;
    req.body = importExample('release-notes');
    return;
  }
  await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(first),
  });
  req.headers['Idempotency-Key'] = key;
}

// ---------------------------------------------------------------- apps and connections
// The example app ('tracker') is pointed at an MCP server of the hooks' own on loopback (the
// contract server may call private addresses: contract-test.js), so its refresh and the example
// connection's check reach a real server built with the official SDK.
const APP_OPERATIONS = new Set([
  'List apps',
  'Create app',
  'Get app',
  'Replace app',
  'Delete app',
  'Refresh app tools',
  'Create connection',
  'Get connection',
  'Replace connection',
  'Delete connection',
  'Test connection',
]);

let peer;
/** An MCP server on loopback with one read-only tool; its /mcp URL. */
function mcpPeer() {
  peer ??= new Promise((resolve) => {
    const { createMcpHandler, Server } = require('@modelcontextprotocol/server');
    const { toNodeHandler } = require('@modelcontextprotocol/node');
    const handler = toNodeHandler(
      createMcpHandler(
        () => {
          const server = new Server({ name: 'contract-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
          server.setRequestHandler('tools/list', async () => ({
            tools: [
              {
                name: 'lookup',
                description: 'Looks a ticket up.',
                inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
                annotations: { readOnlyHint: true },
              },
            ],
          }));
          server.setRequestHandler('tools/call', async () => ({ content: [{ type: 'text', text: 'found' }] }));
          return server;
        },
        { legacy: 'stateless' },
      ),
    );
    const listening = http
      .createServer((req, res) => void handler(req, res))
      .listen(0, '127.0.0.1', () => {
        listening.unref();
        resolve(`http://127.0.0.1:${listening.address().port}/mcp`);
      });
  });
  return peer;
}

const appBody = async (slug, url) => ({ kind: 'service.app/v1', slug, name: `App ${slug}`, description: null, mcp: { url: url ?? (await mcpPeer()) } });
const withApp = (uri, slug) => uri.replace(/\/apps\/[^/?]+/, `/apps/${slug}`);
const withConnection = (uri, ref) => uri.replace(/\/connections\/[^/?]+/, `/connections/${encodeURIComponent(ref)}`);
const etagOf = async (path) => (await api('GET', path)).etag;

/**
 * The start of a transaction whose fixtures differ from the spec's examples: the owner's token, the
 * reply checked against the schema (beforeEachValidation) rather than the example, 503 skipped (it
 * needs an unreachable issuer: test/integration/auth.test.ts), 401 sent without a token and 403 with
 * a read-only one. True when that is all the transaction needs (401, 403).
 */
function authorizedForSchema(t, status) {
  t.request.headers.Authorization = `Bearer ${token}`;
  delete t.expected.body;
  delete t.expected.bodySchema;
  if (t.expected.headers) delete t.expected.headers.Link; // present only when a next page exists
  if (status >= 400) t.skip = status === 503;
  if (status === 401) delete t.request.headers.Authorization;
  if (status === 403) t.request.headers.Authorization = `Bearer ${mint('read')}`;
  return status === 401 || status === 403;
}

/** A valid body of each write (the ones the spec gives no example of), so a 404 or a 428 is not a 400 first. */
async function appRequestBody(summary) {
  if (summary === 'Replace app') return { ...(await appBody('tracker')), name: 'Tracker (renamed)' };
  if (summary === 'Refresh app tools') return {};
  if (summary === 'Replace connection') return { ref: 'tracker:acme', app: 'tracker', label: 'Renamed' };
  return undefined;
}

async function prepareApps(t, summary, status) {
  const req = t.request;
  req.headers.Authorization = `Bearer ${token}`;
  // Apps, tools and connections made here differ from the examples: the body is checked against the
  // schema (beforeEachValidation), not compared with the example.
  delete t.expected.body;
  delete t.expected.bodySchema;
  const body = await appRequestBody(summary);
  if (body !== undefined) req.body = JSON.stringify(body);
  if (status >= 400) t.skip = status === 503; // 503 needs an unreachable issuer (test/integration/auth.test.ts)
  if (status === 401) return void delete req.headers.Authorization;
  if (status === 403) return void (req.headers.Authorization = `Bearer ${mint('read')}`);
  const onApp = summary.endsWith('app') || summary === 'Refresh app tools';
  const target = (slug) => setUri(t, onApp ? withApp(req.uri, slug) : withConnection(req.uri, slug));
  if (status === 404) {
    if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
    return target(onApp ? 'no-such-app' : 'no-such-connection');
  }
  if (status === 428) {
    delete req.headers['If-Match'];
    return target(onApp ? 'tracker' : 'tracker:acme');
  }
  if (status === 400 || status === 413 || status === 415) {
    if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
    if (status === 400) req.body = '{"unexpected": true}';
    if (status === 413) req.body = JSON.stringify({ padding: 'x'.repeat(70 * 1024) });
    if (status === 415) req.headers['Content-Type'] = 'text/plain';
    return;
  }
  switch (summary) {
    case 'Create app':
      if (status === 201) req.body = JSON.stringify(await appBody('tracker'));
      return; // 409: the example's slug, created by the 201
    case 'Replace app':
      target('tracker');
      req.headers['If-Match'] = status === 409 ? STALE : await etagOf('/apps/tracker');
      return;
    case 'Delete app': {
      if (status === 409) {
        req.headers['If-Match'] = STALE;
        return target('tracker');
      }
      const { etag } = await api('PUT', '/apps', await appBody('throwaway-app'));
      target('throwaway-app');
      req.headers['If-Match'] = etag;
      return;
    }
    case 'Refresh app tools':
      if (status === 409) return target('kv'); // a built-in app's tools are the service's own
      if (status === 502) {
        await api('PUT', '/apps', await appBody('unreachable', 'http://127.0.0.1:1/mcp')).catch(() => undefined);
        return target('unreachable');
      }
      return target('tracker');
    case 'Replace connection':
      target('tracker:acme');
      req.headers['If-Match'] = status === 409 ? STALE : await etagOf('/connections/tracker%3Aacme');
      return;
    case 'Delete connection': {
      if (status === 409) {
        req.headers['If-Match'] = STALE;
        return target('tracker:acme');
      }
      const { etag } = await api('PUT', '/connections', { ref: 'throwaway', app: 'kv', label: null, credentials: { kind: 'none' } });
      target('throwaway');
      req.headers['If-Match'] = etag;
      return;
    }
    default: // List apps, Get app (the example: a built-in one), Create, Get and Test connection (the example's)
      return;
  }
}

// ---------------------------------------------------------------- event subscriptions
// The endpoints point at a receiver of the hooks' own on loopback that answers 200 (the contract
// server may call private addresses: contract-test.js). `main` receives a test event whose
// delivery is redelivered; `off` is disabled after its one delivery (its test and redelivery are
// 409); the create's 409 fills the workspace up to its limit, and the delete takes one of those.
const EVENT_OPERATIONS = new Set([
  'List event endpoints',
  'Create event endpoint',
  'Get event endpoint',
  'Replace event endpoint',
  'Delete event endpoint',
  'Rotate event endpoint secret',
  'Test event endpoint',
  'List event deliveries',
  'Redeliver event',
]);

let eventReceiver;
function eventReceiverUrl() {
  eventReceiver ??= new Promise((resolve) => {
    const listening = http
      .createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200).end('ok'));
      })
      .listen(0, '127.0.0.1', () => {
        listening.unref();
        resolve(`http://127.0.0.1:${listening.address().port}/events`);
      });
  });
  return eventReceiver;
}

/** An endpoint with one delivery that ended; `disable`: then disabled. Its id and the delivery's. */
async function endpointWithDelivery(disable) {
  const url = await eventReceiverUrl();
  const { data: endpoint } = await api('PUT', '/event-endpoints', { url, event_types: ['*'] });
  const { data: delivery } = await api('POST', `/event-endpoints/${endpoint.id}/test`);
  for (let i = 0; i < 200; i++) {
    const { data } = await api('GET', `/event-endpoints/${endpoint.id}/deliveries`);
    if (data[0].status === 'succeeded') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  if (disable) {
    const { etag } = await api('GET', `/event-endpoints/${endpoint.id}`);
    await api('PUT', `/event-endpoints/${endpoint.id}`, { url, event_types: ['*'], status: 'disabled' }, { 'If-Match': etag });
  }
  return { endpoint: endpoint.id, delivery: delivery.id };
}

let eventFixtures;
const eventEndpoints = () =>
  (eventFixtures ??= Promise.all([endpointWithDelivery(false), endpointWithDelivery(true)]).then(([main, off]) => ({ main, off, fillers: [] })));

const withEndpoint = (uri, id) => uri.replace(/\/event-endpoints\/[^/?]+/, `/event-endpoints/${id}`);
const withDelivery = (uri, id) => uri.replace(/\/deliveries\/[^/?]+/, `/deliveries/${id}`);
const UNKNOWN_ID = '019ab2c4-0000-7000-8000-000000000000';

async function prepareEventEndpoints(t, summary, status) {
  if (authorizedForSchema(t, status)) return;
  const req = t.request;
  const { main, off, fillers } = await eventEndpoints();
  const url = await eventReceiverUrl();
  if (['Create event endpoint', 'Replace event endpoint'].includes(summary)) req.body = JSON.stringify({ url, event_types: ['*'], description: 'contract' });
  const aim = (ids) => {
    setUri(t, ids.delivery ? withDelivery(withEndpoint(req.uri, ids.endpoint), ids.delivery) : withEndpoint(req.uri, ids.endpoint));
  };
  aim({ endpoint: main.endpoint, delivery: summary === 'Redeliver event' ? main.delivery : undefined });
  // The example's cursor names a page of another list.
  if (summary === 'List event deliveries') setUri(t, req.uri.split('?')[0]);
  if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = (await api('GET', `/event-endpoints/${main.endpoint}`)).etag;
  switch (status) {
    case 400:
      if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
      if (summary === 'List event deliveries') return setUri(t, `${req.uri.split('?')[0]}?status=lost`);
      req.body = '{"unexpected": true}';
      return;
    case 404:
      if (req.headers['If-Match'] !== undefined) req.headers['If-Match'] = '*';
      return aim(summary === 'Redeliver event' ? { endpoint: main.endpoint, delivery: UNKNOWN_ID } : { endpoint: UNKNOWN_ID });
    case 413:
      req.body = JSON.stringify({ padding: 'x'.repeat(70 * 1024) });
      return;
    case 415:
      req.headers['Content-Type'] = 'text/plain';
      return;
    case 428:
      delete req.headers['If-Match'];
      return;
    case 409:
      if (summary === 'Create event endpoint') {
        // Up to the limit: the create after is refused.
        for (;;) {
          const res = await fetch(`${baseUrl}/api/build/event-endpoints`, {
            method: 'PUT',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ url, event_types: ['agent.created'] }),
          });
          if (res.status !== 201) return;
          fillers.push((await res.json()).data.id);
        }
      }
      if (summary === 'Test event endpoint') return aim({ endpoint: off.endpoint });
      if (summary === 'Redeliver event') return aim(off);
      req.headers['If-Match'] = STALE;
      return;
    default:
      if (summary === 'Delete event endpoint') {
        const id = fillers.pop() ?? (await api('PUT', '/event-endpoints', { url, event_types: ['*'] })).data.id;
        aim({ endpoint: id });
        req.headers['If-Match'] = (await api('GET', `/event-endpoints/${id}`)).etag;
      }
  }
}

// ---------------------------------------------------------------- skills and eval datasets
const SKILL_OPERATIONS = /^(List|Create|Import|Read|Replace|Delete|Compare|Restore) skills?( versions?)?$/;
const DATASET_OPERATIONS = /^(List|Create|Read|Replace|Delete|Compare|Restore) eval datasets?( versions?)?$/;
const example = (name) => JSON.parse(JSON.stringify(loadSpec().document.components.examples[name].value));
const skillExample = () => example('SkillCreateRequestExample');
const importExample = (name) => loadSpec().document.components.examples.SkillImportRequestExample.value.replace('name: release-notes', `name: ${name}`);

let skillInUse;
/** A skill an agent lists in its workspace_skills: its delete is 409. */
function skillListedByAgent() {
  skillInUse ??= api('PUT', '/skills', { ...skillExample(), name: 'in-use-skill', files: [] }).then(() =>
    api('PUT', '/agents', { ...JSON.parse(exampleAgent), slug: 'skill-user', triggers: [], workspace_skills: ['in-use-skill'] }),
  );
  return skillInUse;
}

/** The workspace-wide documents named by a key (skills by name, datasets by slug), as prepareNamed drives them. */
const NAMED = {
  skill: {
    collection: 'skills',
    example: 'pdf-forms',
    edited: (doc, sent) => ({ ...doc, description: sent.description }),
    throwaway: () => api('PUT', '/skills', { ...skillExample(), name: 'throwaway-skill' }).then(() => 'throwaway-skill'),
    inUse: () => skillListedByAgent().then(() => 'in-use-skill'),
  },
  'eval dataset': {
    collection: 'eval-datasets',
    example: 'refund-requests',
    edited: (doc, sent) => ({ ...doc, cases: sent.cases }),
    throwaway: () => api('PUT', '/eval-datasets', { ...example('EvalDatasetCreateRequestExample'), slug: 'throwaway-dataset' }).then(() => 'throwaway-dataset'),
  },
};

/**
 * The operations of a named kind on its example (`pdf-forms`, `refund-requests`: created by the
 * first 201; replaced by the Replace's 200, so it keeps versions 1 and 2), or on one of no one's for the 404s.
 */
async function prepareNamed(t, summary, status, noun) {
  const kind = NAMED[noun];
  const req = t.request;
  if (authorizedForSchema(t, status)) return;
  const ref = status === 404 ? `no-such-${kind.collection}` : kind.example;
  const path = req.uri.split('?')[0];
  const collection = `/api/build/${kind.collection}`;
  const named = (uri, to) => uri.replace(new RegExp(`${collection}/(?!import)[^/?]+`), `${collection}/${to}`);
  const verb = summary.split(' ')[0];
  if (verb === 'List' && !/ versions$/.test(summary)) return setUri(t, status === 400 ? `${path}?cursor=not-a-cursor` : path);
  if (verb === 'Create' || verb === 'Import') {
    const markdown = verb === 'Import';
    // Dredd sends no body for a text example: the SKILL.md example (under another name for the text/plain transactions).
    if (markdown) req.body = importExample(req.headers['Content-Type'] === 'text/plain' ? 'release-notes-plain' : 'release-notes');
    if (status === 400) req.body = markdown ? '# No front matter\n' : '{"unexpected": true}';
    if (status === 413) req.body = markdown ? 'x'.repeat(100 * 1024) : JSON.stringify({ padding: 'x'.repeat(1100 * 1024) });
    if (status === 415) req.headers['Content-Type'] = markdown ? 'application/json' : 'text/plain';
    return; // 201 the example; 409 the example again (created by the 201)
  }
  if (/ versions?$/.test(summary)) {
    const base = `${collection}/${ref}/versions`;
    const version = status === 400 ? 'not-a-version' : '1';
    const uris = { List: `${base}?limit=1`, Read: `${base}/${version}`, Compare: `${base}/${version}/diff?to=current`, Restore: `${base}/${version}/restore` };
    setUri(t, status === 400 && verb === 'List' ? `${base}?cursor=not-a-cursor` : uris[verb]);
    if (verb !== 'Restore') return;
    if (status === 428) delete req.headers['If-Match'];
    else if (status === 409) req.headers['If-Match'] = STALE;
    else if (status === 200) req.headers['If-Match'] = (await current(kind.collection, kind.example)).etag;
    else req.headers['If-Match'] = '*';
    return;
  }
  setUri(t, named(req.uri, ref));
  if (verb === 'Replace') {
    const { etag, doc } = await current(kind.collection, kind.example);
    req.body = status === 400 ? '{"unexpected": true}' : JSON.stringify(kind.edited(doc, JSON.parse(req.body)));
    if (status === 413) req.body = JSON.stringify({ padding: 'x'.repeat(1100 * 1024) });
    if (status === 415) req.headers['Content-Type'] = 'text/plain';
    if (status === 428) delete req.headers['If-Match'];
    else req.headers['If-Match'] = status === 200 ? etag : status === 409 ? STALE : '*';
    return;
  }
  if (verb === 'Delete' && (status === 409 || status === 200)) return setUri(t, named(req.uri, await (status === 409 ? kind.inUse() : kind.throwaway())));
  // Read: the example's, or no one's for the 404.
}

// ---------------------------------------------------------------- webhook deliveries
// One active agent with a trigger per outcome; the URLs come from the write that created them.
let receivers;
function webhookReceivers() {
  receivers ??= (async () => {
    const hook = (name, extra = {}) => ({ kind: 'webhook', name, ...extra });
    const created = await api('PUT', '/agents', {
      ...JSON.parse(exampleAgent),
      slug: 'webhook-contract',
      triggers: [hook('open'), hook('signed', { signing: 'standard-webhooks' }), hook('disabled', { enabled: false }), hook('limited'), hook('rotated')],
    });
    await api('POST', '/agents/webhook-contract/status', { status: 'active' }, { 'If-Match': created.etag });
    const urls = {};
    for (const { trigger_id, url } of created.data.webhook_urls) {
      urls[created.data.document.triggers.find((tr) => tr.id === trigger_id).name] = new URL(url).pathname;
    }
    await api('POST', '/agents/webhook-contract/rotate-webhook', { trigger_id: created.data.document.triggers.find((tr) => tr.name === 'rotated').id });
    return urls;
  })();
  return receivers;
}

/** Sends deliveries to the 'limited' trigger until it answers 429 (its limit is per minute). */
async function exhaust(path) {
  for (let i = 0; i < 1000; i++) {
    const res = await fetch(`${baseUrl}${path}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    if (res.status === 429) return;
  }
  throw new Error('the rate limit never answered 429');
}

async function prepareDelivery(t, status) {
  const req = t.request;
  const urls = await webhookReceivers();
  if (status >= 400) t.skip = false;
  delete req.headers.Authorization; // the URL's secret is the credential
  for (const name of Object.keys(req.headers)) if (/^(webhook-|idempotency-key)/i.test(name)) delete req.headers[name];
  const type = req.headers['Content-Type'] || 'application/json';
  req.body = type.startsWith('application/x-www-form-urlencoded') ? 'ticket=4711' : type.startsWith('text/') ? 'plain text' : JSON.stringify({ ticket: 4711 });
  const target = { 202: 'open', 401: 'signed', 409: 'disabled', 429: 'limited', 410: 'rotated', 413: 'open', 404: 'open' }[status];
  let path = urls[target];
  if (status === 404) path = path.replace(/[^/]+$/, 'whk_wrong-secret');
  if (status === 413) req.body = 'x'.repeat(70 * 1024);
  if (status === 429) await exhaust(path);
  setUri(t, path);
}

// Two standard-webhooks connections, each with an active agent listening to every event: one
// delivered to as the transaction asks, one whose trigger is sent deliveries until its rate is spent.
let eventReceivers;
function appEventReceivers() {
  eventReceivers ??= (async () => {
    const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
    const urls = {};
    for (const name of ['open', 'limited']) {
      const ref = `sw:contract-${name}`;
      const connection = await api('PUT', '/connections', { ref, app: 'standard-webhooks', credentials: { kind: 'signing_secret', secret } });
      urls[name] = new URL(connection.data.receive_url).pathname;
      const slug = `events-contract-${name}`;
      const trigger = { kind: 'app_event', name: 'Any', app: 'standard-webhooks', event: '*', connection: ref };
      const created = await api('PUT', '/agents', { ...JSON.parse(exampleAgent), slug, triggers: [trigger] });
      await api('POST', `/agents/${slug}/status`, { status: 'active' }, { 'If-Match': created.etag });
    }
    return { urls, signer: new Webhook(secret) };
  })();
  return eventReceivers;
}

/** A delivery of `body` signed as a Standard Webhooks sender signs it, with a fresh id. */
function signedEvent(signer, body) {
  const id = `msg_${crypto.randomUUID()}`;
  const at = new Date();
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(id, at, body) };
}

async function prepareAppEvent(t, status) {
  const req = t.request;
  const { urls, signer } = await appEventReceivers();
  if (status >= 400) t.skip = false;
  delete req.headers.Authorization; // the signature is the credential
  for (const name of Object.keys(req.headers)) if (/^webhook-/i.test(name)) delete req.headers[name];
  req.headers['Content-Type'] = 'application/json';
  req.body = status === 413 ? JSON.stringify({ type: 'big', padding: 'x'.repeat(70 * 1024) }) : JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
  Object.assign(req.headers, signedEvent(signer, req.body));
  if (status === 401) req.headers['webhook-signature'] = `v1,${Buffer.alloc(32).toString('base64')}`;
  let path = urls[status === 429 ? 'limited' : 'open'];
  if (status === 404) path = '/events/rcv_unknown';
  if (status === 429) {
    for (let i = 0; ; i++) {
      const res = await fetch(`${baseUrl}${path}`, {
        method: 'POST',
        body: req.body,
        headers: { 'content-type': 'application/json', ...signedEvent(signer, req.body) },
      });
      if (res.status === 429) break;
      if (i > 1000) throw new Error('the rate limit never answered 429');
    }
    Object.assign(req.headers, signedEvent(signer, req.body));
  }
  setUri(t, path);
}

// ---------------------------------------------------------------- channels
let whatsappReceiver;
/** The receiving path of a whatsapp connection of the contract workspace (its verify token: `contract-verify`). */
function whatsappReceiverPath() {
  whatsappReceiver ??= api('PUT', '/connections', {
    ref: 'whatsapp:contract',
    app: 'whatsapp',
    credentials: {
      kind: 'whatsapp',
      phone_number_id: '1065403522',
      access_token: 'contract-token',
      app_secret: 'contract-secret',
      verify_token: 'contract-verify',
    },
  }).then((connection) => new URL(connection.data.receive_url).pathname);
  return whatsappReceiver;
}

/** Meta's subscription check: the right token (200, text), a wrong one (403), a receiver that is no whatsapp connection's (404). */
async function prepareSubscriptionCheck(t, status) {
  if (status >= 400) t.skip = false;
  delete t.request.headers.Authorization; // the verify token is the credential
  const path = status === 404 ? '/events/rcv_unknown' : await whatsappReceiverPath();
  const token = status === 403 ? 'wrong-token' : 'contract-verify';
  setUri(t, `${path}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`);
}

/** The agent's messages: a page (200), a bad cursor (400), no token (401), a read-only token (403), an unknown agent (404). */
function prepareMessageList(t, status) {
  const path = t.request.uri.split('?')[0];
  t.request.headers.Authorization = `Bearer ${token}`;
  if (t.expected.headers) delete t.expected.headers.Link; // present only when a next page exists
  if (status >= 400) t.skip = false;
  if (status === 400) return setUri(t, `${path}?cursor=not-a-cursor`);
  if (status === 401) delete t.request.headers.Authorization;
  if (status === 403) t.request.headers.Authorization = `Bearer ${mint('read')}`;
  setUri(t, status === 404 ? withRef(path, 'no-such-document') : path);
}

// ---------------------------------------------------------------- evals
const EVAL_OPERATIONS = new Set(['Start an eval', "List an agent's evals", 'Read an eval', 'Compare two evals', 'Follow an eval']);
const NO_SUCH_EVAL = '00000000-0000-4000-8000-000000000000';

let evalAgents;
/** An agent to evaluate (`eval-contract`), an archived one (its eval is 409), and one finished-or-not eval of the first. */
function evalFixtures() {
  evalAgents ??= (async () => {
    const agent = { ...JSON.parse(exampleAgent), triggers: [], eval_criteria: ['Answers politely', { type: 'contains', value: 'order' }] };
    await api('PUT', '/agents', { ...agent, slug: 'eval-contract' });
    const archived = await api('PUT', '/agents', { ...agent, slug: 'eval-archived' });
    await api('POST', '/agents/eval-archived/status', { status: 'archived' }, { 'If-Match': archived.etag });
    await api('PUT', '/eval-datasets', { ...example('EvalDatasetCreateRequestExample'), slug: 'eval-contract-cases' });
    const started = await api('POST', '/agents/eval-contract/evals', { dataset: 'eval-contract-cases' });
    // Finished, so that its stream replays and ends (and past its last event is 204).
    for (let i = 0; i < 300 && !['finished', 'failed'].includes((await api('GET', `/evals/${started.data.id}`)).data.status); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { evalId: started.data.id };
  })();
  return evalAgents;
}

/** The eval operations on `eval-contract` and its eval, or on what does not exist for the 404s. */
async function prepareEvals(t, summary, status) {
  const req = t.request;
  if (authorizedForSchema(t, status)) return;
  const { evalId } = await evalFixtures();
  const path = req.uri.split('?')[0];
  if (summary === 'Start an eval') {
    setUri(t, withRef(path, status === 404 ? 'no-such-document' : status === 409 ? 'eval-archived' : 'eval-contract'));
    req.body = JSON.stringify(status === 400 ? { dataset: 'eval-contract-cases', repeats: 9 } : { dataset: 'eval-contract-cases' });
    if (status === 413) req.body = JSON.stringify({ padding: 'x'.repeat(70 * 1024) });
    if (status === 415) req.headers['Content-Type'] = 'text/plain';
    return;
  }
  if (summary === "List an agent's evals") {
    const base = withRef(path, status === 404 ? 'no-such-document' : 'eval-contract');
    return setUri(t, status === 400 ? `${base}?cursor=not-a-cursor` : base);
  }
  const id = status === 400 ? 'not-a-uuid' : status === 404 ? NO_SUCH_EVAL : evalId;
  if (summary === 'Follow an eval') {
    delete req.headers['Last-Event-ID']; // the whole stream, from the first event
    if (status === 204) req.headers['Last-Event-ID'] = '999999999'; // past the finished eval's last event
    if (status === 429) await holdStreams(Number(process.env.EVENT_STREAMS_PER_CALLER));
    if (status === 200 && (t.expected.headers['Content-Type'] || '').includes('json')) req.headers.Accept = 'application/json';
    else req.headers.Accept = 'text/event-stream';
    return setUri(t, `/api/build/evals/${id}/events`);
  }
  setUri(t, summary === 'Read an eval' ? `/api/build/evals/${id}` : `/api/build/evals/${id}/compare/${evalId}`);
}

hooks.beforeEach((t, done) => {
  prepare(t).then(
    () => done(),
    (err) => {
      t.fail = `hook could not prepare the request: ${err.message}`;
      done();
    },
  );
});

hooks.afterEach((t, done) => {
  const { summary, status } = parse(t.name);
  for (const held of heldStreams) held.destroy();
  heldStreams = [];
  if (status === 202 && t.real && t.real.statusCode === 202) {
    const runId = JSON.parse(t.real.body).data.run_id;
    if (summary === 'Test agent') started.agent = runId;
    if (summary === 'Test workflow') started.workflow = runId;
  }
  done();
});

hooks.beforeEachValidation((t, done) => {
  validatorReady.then(
    (api) => {
      const { path } = parse(t.name);
      const operation =
        api.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} }) ||
        api.matchOperation({ method: t.request.method, path, headers: {} });
      if (String(t.real.headers['content-type']).startsWith('text/plain')) {
        // Meta's subscription check answers its challenge as text: the status and the echo are the contract.
        const expected = parse(t.name).status;
        if (t.real.statusCode !== expected) t.fail = `expected ${expected}, got ${t.real.statusCode}: ${t.real.body}`;
        else if (!t.request.uri.includes(`hub.challenge=${t.real.body}`)) t.fail = `the challenge was not echoed: ${t.real.body}`;
        return done();
      }
      if (String(t.real.headers['content-type']).startsWith('text/event-stream')) {
        t.fail = eventStreamProblem(t.request.uri.startsWith('/api/build/evals/') ? 'eval' : 'run', t.real.body) ?? undefined;
        if (!t.fail && t.real.statusCode !== parse(t.name).status) t.fail = `expected ${parse(t.name).status}, got ${t.real.statusCode}`;
        return done();
      }
      let body;
      try {
        body = t.real.body ? JSON.parse(t.real.body) : undefined;
      } catch {
        t.fail = `reply is not JSON: ${t.real.body.slice(0, 200)}`;
        return done();
      }
      const reply =
        body === undefined
          ? { status: t.real.statusCode, noContent: true, headers: t.real.headers }
          : { status: t.real.statusCode, body, headers: t.real.headers };
      const problem = contractViolation(api, operation, reply);
      if (problem) t.fail = `reply breaks the contract: ${problem}`;
      else if (t.real.statusCode !== parse(t.name).status) t.fail = `expected ${parse(t.name).status}, got ${t.real.statusCode}: ${t.real.body}`;
      done();
    },
    (err) => {
      t.fail = `validator failed: ${err.message}`;
      done();
    },
  );
});

/**
 * An event stream's body: frames of id/event/data, ids counting from 1, each data a RunEvent (an
 * EvalEvent for an eval's stream), ending with run.finished (eval.finished).
 */
function eventStreamProblem(kind, text) {
  const frames = text.split('\n\n').filter((f) => f.trim() && !f.startsWith(':'));
  if (!frames.length) return 'the event stream is empty';
  const schema = loadSpec().document.components.schemas[kind === 'eval' ? 'EvalEvent' : 'RunEvent'];
  const final = `${kind}.finished`;
  let last;
  for (const [i, frame] of frames.entries()) {
    const fields = Object.fromEntries(frame.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
    const data = JSON.parse(fields.data);
    if (Number(fields.id) !== i + 1 || data.seq !== i + 1) return `event ${i + 1} has id ${fields.id}`;
    if (fields.event !== data.type) return `event ${i + 1}: event: ${fields.event} but data.type ${data.type}`;
    const missing = schema.required.find((name) => !(name in data));
    if (missing) return `event ${i + 1} lacks ${missing}`;
    last = data;
  }
  return last.type === final ? null : `the stream ended after ${last.type}, not ${final}`;
}
