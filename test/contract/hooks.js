// Dredd hooks for the contract test (scripts/contract-test.js). Dredd builds one transaction per
// documented status of every operation from openapi.yaml's examples; these hooks
//  - mint tokens with the server's embedded issuer (same data directory),
//  - carry ETags: replaces and status writes send the current stamp read just before,
//  - turn the request of each documented 4xx into one that provokes it (Dredd skips non-2xx by
//    default; every 4xx that a request can provoke is exercised here),
//  - validate every real reply (status, headers, body) against the spec with openapi-backend.
'use strict';
const hooks = require('hooks');
const { openLocalIssuer } = require('../../dist/src/auth/local-issuer');
const { loadSpec } = require('../../dist/src/http/spec');
const { createContractValidator, contractViolation } = require('../../dist/src/http/openapi');

const baseUrl = process.env.CONTRACT_BASE_URL;
const issuer = openLocalIssuer(process.env.CONTRACT_DATA_DIR, baseUrl);
const mint = (scope = 'build') =>
  issuer.mint({ sub: 'contract-user', audience: 'build-api', claims: { workspace: 'contract', scope }, ttlSeconds: 3600 });
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
  if (summary.startsWith('Deliver webhook')) return prepareDelivery(t, status);
  if (summary.startsWith('List') && summary.endsWith('runs')) return prepareRunList(t, status);
  const req = t.request;
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

hooks.beforeEach((t, done) => {
  prepare(t).then(() => done(), (err) => {
    t.fail = `hook could not prepare the request: ${err.message}`;
    done();
  });
});

hooks.afterEach((t, done) => {
  const { summary, status } = parse(t.name);
  if (status === 202 && t.real && t.real.statusCode === 202) {
    const runId = JSON.parse(t.real.body).data.run_id;
    if (summary === 'Test agent') started.agent = runId;
    if (summary === 'Test workflow') started.workflow = runId;
  }
  done();
});

hooks.beforeEachValidation((t, done) => {
  validatorReady.then((api) => {
    const { path } = parse(t.name);
    const operation = api.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} })
      || api.matchOperation({ method: t.request.method, path, headers: {} });
    let body;
    try {
      body = t.real.body ? JSON.parse(t.real.body) : undefined;
    } catch {
      t.fail = `reply is not JSON: ${t.real.body.slice(0, 200)}`;
      return done();
    }
    const problem = contractViolation(api, operation, { status: t.real.statusCode, body, headers: t.real.headers });
    if (problem) t.fail = `reply breaks the contract: ${problem}`;
    else if (t.real.statusCode !== parse(t.name).status) t.fail = `expected ${parse(t.name).status}, got ${t.real.statusCode}: ${t.real.body}`;
    done();
  }, (err) => {
    t.fail = `validator failed: ${err.message}`;
    done();
  });
});
