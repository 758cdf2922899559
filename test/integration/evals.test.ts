// Evals over HTTP (docs/evals.md), with the scripted model and a judge on loopback speaking the
// OpenAI-compatible API: deterministic checks passing and failing and stable across repeats; a
// judge's verdict, garbage and 500 (errored, never a pass), and the temperature and schema it was
// sent; no judge (skipped, incomplete); two versions compared where one case regresses, and a gate
// against that baseline; credits reserved up front (409 and nothing run when they cannot be), then
// charged as spent; another workspace sees none of it. Every reply is checked against openapi.yaml.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { components } from '../../generated/api';
import { projectRoot } from '../../src/paths';
import { minimalAgent, replaceBody } from '../helpers/fixtures';
import { startService, type TestService } from '../helpers/service';

type Eval = components['schemas']['Eval'];
type Verdict = 'honest' | 'garbage' | 'error';

let judgeMode: Verdict = 'honest';
const judged: Record<string, unknown>[] = [];
let judge: http.Server;
let t: TestService;

beforeAll(async () => {
  judge = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      judged.push(JSON.parse(raw));
      if (judgeMode === 'error') return void res.writeHead(500).end('{"error":"overloaded"}');
      const content = judgeMode === 'garbage' ? 'I think it is fine.' : JSON.stringify({ score: 0.9, reason: 'It greets the customer by name.' });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'j', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(judge.address() as AddressInfo).port}`;
  t = await startService({ OPENAI_BASE_URL: url, OPENAI_MODELS: 'judge-1', DEFAULT_CREDITS: '1000' });
});
afterAll(async () => {
  await t.close();
  judge.close();
});

const CRITERIA = [
  { type: 'contains', id: 'names-ada', value: 'Ada' },
  { type: 'tool_not_called', id: 'no-writes', tool: 'kv.set' },
  { type: 'max_steps', id: 'short', value: 3 },
  'Greets the customer by name',
];

async function agentWith(name: string, token = t.token()) {
  const res = await t.client(token).PUT('/api/build/agents', {
    body: {
      ...minimalAgent(name),
      max_steps: 3,
      tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      eval_criteria: CRITERIA as never,
    },
  });
  expect(res.response.status).toBe(201);
  return res.data!.data.document;
}

async function datasetOf(slug: string, token = t.token()) {
  const res = await t.client(token).PUT('/api/build/eval-datasets', {
    body: {
      kind: 'service.eval-dataset/v1',
      slug,
      name: 'Greetings',
      cases: [
        { id: 'greets', prompt: 'Hello {{name}}!', variables: { name: 'Ada' } },
        {
          id: 'writes',
          prompt: '/call kv.set {"key":"k","value":1}',
          criteria: [
            { type: 'tool_called', id: 'writes-kv', tool: 'kv.set' },
            { type: 'run_status', id: 'ends-well', status: 'succeeded' },
          ],
        },
      ],
    },
  });
  expect(res.response.status).toBe(201);
  return res.data!.data.document;
}

async function finished(id: string, token = t.token()): Promise<Eval> {
  for (let i = 0; i < 200; i++) {
    const res = await t.client(token).GET('/api/build/evals/{evalId}', { params: { path: { evalId: id } } });
    expect(res.response.status).toBe(200);
    if (res.data!.data.status === 'finished' || res.data!.data.status === 'failed') return res.data!.data;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`eval ${id} did not finish`);
}

const start = (ref: string, body: components['schemas']['EvalRequest'], token = t.token()) =>
  t.client(token).POST('/api/build/agents/{ref}/evals', { params: { path: { ref } }, body });

const outcomes = (e: Eval) =>
  Object.fromEntries(e.results.map((r) => [`${r.case_id}#${r.repeat}`, Object.fromEntries(r.criteria.map((c) => [c.criterion_id, c.outcome]))]));

test('deterministic checks pass and fail by the scripted runs, the same in every repeat; without a judge, rubrics are skipped', async () => {
  const agent = await agentWith('Greeter');
  await datasetOf('greetings');
  const res = await start(agent.slug, { dataset: 'greetings', repeats: 2, judge: undefined });
  expect(res.response.status).toBe(202);
  expect(res.response.headers.get('location')).toBe(`/api/build/evals/${res.data!.data.id}`);
  expect(res.data!.data).toMatchObject({
    status: 'queued',
    repeats: 2,
    judge: null,
    agent: { slug: agent.slug, version: 1 },
    dataset: { slug: 'greetings', version: 1 },
  });
  const done = await finished(res.data!.data.id);
  const rubric = done.results[0]!.criteria[3]!.criterion_id;
  const greets = { 'names-ada': 'passed', 'no-writes': 'passed', short: 'passed', [rubric]: 'skipped' };
  const writes = { 'names-ada': 'failed', 'no-writes': 'failed', short: 'passed', [rubric]: 'skipped', 'writes-kv': 'passed', 'ends-well': 'passed' };
  expect(outcomes(done)).toEqual({ 'greets#1': greets, 'greets#2': greets, 'writes#1': writes, 'writes#2': writes });
  expect(done.results[0]!.criteria[3]).toMatchObject({
    type: 'judge',
    source: 'agent',
    outcome: 'skipped',
    grader: null,
    reason: expect.stringContaining('no judge model'),
  });
  expect(done.results[2]!.criteria[4]).toMatchObject({ type: 'tool_called', source: 'case' });
  expect(done.summary).toMatchObject({ runs: 4, runs_passed: 0, criteria: { passed: 12, failed: 4, errored: 0, skipped: 4, pending: 0 }, incomplete: true });
  expect(done.summary.pass_rate).toBeCloseTo(12 / 16);
  for (const r of done.results) {
    const run = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: r.run_id! } } });
    expect(run.data!.data).toMatchObject({ source: 'eval', status: 'succeeded', version: 1 });
  }
});

test('a judge on loopback: a verdict passes at its threshold, at temperature 0 with the verdict schema; garbage and a 500 are errored', async () => {
  const agent = await agentWith('Judged');
  await datasetOf('judged');
  judged.length = 0;
  judgeMode = 'honest';
  const honest = await finished((await start(agent.slug, { dataset: 'judged', judge: 'judge-1' })).data!.data.id);
  const rubric = (e: Eval) => e.results.map((r) => r.criteria.find((c) => c.type === 'judge')!);
  expect(rubric(honest).map((c) => [c.outcome, c.score, c.grader])).toEqual([
    ['passed', 0.9, 'judge:judge-1'],
    ['passed', 0.9, 'judge:judge-1'],
  ]);
  expect(judged).toHaveLength(2);
  expect(judged[0]).toMatchObject({
    model: 'judge-1',
    temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true } },
  });
  expect(honest.summary.credits.judge).toBe(2);
  for (const mode of ['garbage', 'error'] as const) {
    judgeMode = mode;
    const broken = await finished((await start(agent.slug, { dataset: 'judged', judge: 'judge-1' })).data!.data.id);
    expect(rubric(broken).map((c) => c.outcome)).toEqual(['errored', 'errored']);
    expect(rubric(broken)[0]!.reason).toBe(
      mode === 'garbage' ? 'the judge answered something that is not a JSON object' : 'the model provider answered HTTP 500',
    );
    expect(broken.summary.criteria.errored).toBe(2);
  }
  judgeMode = 'honest';
  const scripted = await start(agent.slug, { dataset: 'judged', judge: 'builtin/scripted' });
  expect(scripted.response.status).toBe(400);
  expect(scripted.error!.error).toContain("body.judge: 'builtin/scripted' cannot judge");
});

test('two versions compared: the case that regresses is named, and a gate against the baseline fails saying why', async () => {
  const agent = await agentWith('Versioned');
  await datasetOf('versions');
  const first = await finished((await start(agent.slug, { dataset: 'versions' })).data!.data.id);
  const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: agent.id } } });
  const replaced = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: agent.id }, header: { 'If-Match': read.response.headers.get('etag')! } },
    body: { ...replaceBody(read.data!.data), max_steps: 1 },
  });
  expect(replaced.response.status).toBe(200);
  const gate = { min_pass_rate: 0.5, skipped_fails: false, baseline: first.id, max_regressions: 0 };
  const second = await finished((await start(agent.slug, { dataset: 'versions', gate })).data!.data.id);
  expect(second.agent.version).toBe(2);
  const compared = await t.client().GET('/api/build/evals/{evalId}/compare/{baseline}', { params: { path: { evalId: second.id, baseline: first.id } } });
  expect(compared.response.status).toBe(200);
  // Version 2 has one step: the run that needs two (a tool call, then its answer) fails.
  const changed = compared.data!.data.cells.filter((c) => c.change !== 'unchanged').map((c) => [c.case_id, c.criterion_id, c.change]);
  expect(changed).toEqual([['writes', 'ends-well', 'regressed']]);
  expect(compared.data!.data.counts).toMatchObject({ regressed: 1, improved: 0, newly_errored: 0 });
  expect(second.gate_result).toEqual({ passed: false, reasons: ['1 criteria regressed against the baseline; at most 0'] });
  const list = await t.client().GET('/api/build/agents/{ref}/evals', { params: { path: { ref: agent.slug }, query: { limit: 1 } } });
  expect(list.data!.data.map((e) => e.id)).toEqual([second.id]);
  const next = await t
    .client()
    .GET('/api/build/agents/{ref}/evals', { params: { path: { ref: agent.slug }, query: { limit: 1, cursor: list.data!.next_cursor! } } });
  expect(next.data).toEqual({ data: [expect.objectContaining({ id: first.id })], next_cursor: null });
});

test('credits: what the eval may spend is reserved; over the balance it is 409 and nothing runs; what was not spent goes back', async () => {
  const token = t.token({ workspace: 'ws-credits' });
  const agent = await agentWith('Costly', token);
  await datasetOf('costly', token);
  await t.service.store.workspaces.setCredits('ws-credits', 5);
  const refused = await start(agent.slug, { dataset: 'costly', repeats: 2 }, token);
  expect(refused.response.status).toBe(409);
  expect(refused.error!.error).toBe('insufficient credits: the eval may spend up to 12 (2 cases, 2 repeats, max_steps 3); the workspace has 5');
  expect(await t.service.store.workspaces.credits('ws-credits', 0)).toBe(5);
  expect((await t.client(token).GET('/api/build/runs')).data!.data).toEqual([]);
  await t.service.store.workspaces.setCredits('ws-credits', 100);
  const done = await finished((await start(agent.slug, { dataset: 'costly' }, token)).data!.data.id, token);
  expect(done.summary.credits.reserved).toBe(6);
  expect(done.summary.credits.agent).toBeGreaterThan(0);
  expect(await t.service.store.workspaces.credits('ws-credits', 0)).toBe(100 - done.summary.credits.agent);
});

test('another workspace sees none of it', async () => {
  const agent = await agentWith('Private');
  await datasetOf('private');
  const done = await finished((await start(agent.slug, { dataset: 'private' })).data!.data.id);
  const other = t.client(t.token({ workspace: 'ws-other' }));
  expect((await other.GET('/api/build/evals/{evalId}', { params: { path: { evalId: done.id } } })).response.status).toBe(404);
  expect((await other.GET('/api/build/evals/{evalId}/compare/{baseline}', { params: { path: { evalId: done.id, baseline: done.id } } })).response.status).toBe(
    404,
  );
  expect((await other.GET('/api/build/agents/{ref}/evals', { params: { path: { ref: agent.id } } })).response.status).toBe(404);
  expect((await other.POST('/api/build/agents/{ref}/evals', { params: { path: { ref: agent.id } }, body: { dataset: 'private' } })).response.status).toBe(404);
});

/** `build-api eval` in a child process (needs `npm run build`), against this test's service: its exit code and output. */
function evalCli(args: string[], token = t.token()): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'build-api.js'), 'eval', ...args], {
    env: { ...process.env, BUILD_API_TOKEN: token, BUILD_API_URL: t.baseUrl },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

test('build-api eval runs an eval, prints its table and exits by its gate: 0 passed, 1 not, 2 could not run', async () => {
  const agent = await agentWith('Gated');
  await datasetOf('gated');
  const passed = await evalCli(['--agent', agent.slug, '--dataset', 'gated', '--min-pass-rate', '0.5', '--allow-skipped']);
  expect(passed.stderr).toBe('');
  expect(passed.stdout).toMatch(/^eval [0-9a-f-]{36}: agent gated v1, dataset gated v1\n/);
  expect(passed.stdout).toMatch(/case\s+repeat\s+run\s+passed\s+failed\s+errored\s+skipped\s+not passed\n/);
  expect(passed.stdout).toMatch(/\ngreets\s+1\s+succeeded\s+3\s+0\s+0\s+1\s+c_[0-9a-f]{10} skipped\n/);
  expect(passed.stdout).toContain('pass rate 75%; 6 passed, 2 failed, 0 errored, 2 skipped');
  expect(passed.stdout.trimEnd().endsWith('gate passed')).toBe(true);
  expect(passed.code).toBe(0);
  const failed = await evalCli(['--agent', agent.slug, '--dataset', 'gated', '--min-pass-rate', '0.9']);
  expect(failed.stdout.trimEnd().split('\n').pop()).toBe('gate failed: the pass rate 75% is below 90%; 2 grades were skipped (no judge model)');
  expect(failed.code).toBe(1);
  const usage = await evalCli(['--dataset', 'gated']);
  expect([usage.code, usage.stderr]).toEqual([2, "build-api eval: --agent: required (the agent's slug or id)\n"]);
  const missing = await evalCli(['--agent', 'no-such-agent', '--dataset', 'gated']);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toMatch(/^build-api eval: POST \/api\/build\/agents\/no-such-agent\/evals: 404 /);
});

test('an eval is followed as a run is: its events streamed to the end, as JSON for pollers, 204 past the last', async () => {
  const agent = await agentWith('Followed');
  await datasetOf('followed');
  const started = (await start(agent.slug, { dataset: 'followed' })).data!.data;
  const res = await fetch(`${t.baseUrl}/api/build/evals/${started.id}/events`, {
    headers: { authorization: `Bearer ${t.token()}`, accept: 'text/event-stream' },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const frames = (await res.text()).split('\n\n').filter((frame) => frame.startsWith('id: '));
  const events = frames.map((frame) =>
    JSON.parse(
      frame
        .split('\n')
        .find((line) => line.startsWith('data: '))!
        .slice(6),
    ),
  );
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events[0]).toMatchObject({ eval_id: started.id, type: 'eval.queued', data: { status: 'queued' } });
  expect(
    events
      .filter((e) => e.type === 'eval.run_started')
      .map((e) => e.data.case_id)
      .sort(),
  ).toEqual(['greets', 'writes']);
  expect(
    events
      .filter((e) => e.type === 'eval.run_graded')
      .map((e) => [e.data.case_id, e.data.passed])
      .sort(),
  ).toEqual([
    ['greets', false],
    ['writes', false],
  ]);
  const last = events[events.length - 1];
  expect(last).toMatchObject({ type: 'eval.finished', data: { status: 'finished', summary: { runs: 2 } } });
  const polled = await t.client().GET('/api/build/evals/{evalId}/events', {
    params: { path: { evalId: started.id }, header: { 'Last-Event-ID': '1' } as never },
    headers: { accept: 'application/json' },
  });
  expect((polled.data as unknown as { data: unknown[] }).data).toEqual(events.slice(1));
  const ended = await fetch(`${t.baseUrl}/api/build/evals/${started.id}/events`, {
    headers: { authorization: `Bearer ${t.token()}`, accept: 'text/event-stream', 'last-event-id': String(last.seq) },
  });
  expect(ended.status).toBe(204);
});
