// Hostile input against a real server process, property-based (fast-check, fixed seed): documents
// generated from openapi.yaml's schemas are accepted by validate; every single mutation that breaks
// one schema rule is a 400 naming the field; garbage of every kind is a 4xx with { error }, never a
// 5xx; the process stays up and nothing is stored. `npm run fuzz` runs many more cases.
import fc from 'fast-check';
import { minimalAgent } from '../helpers/fixtures';
import { storedWrite } from '../helpers/stored';
import { arbitraryFor, mutationsOf, schemaNamed, type Hints } from './schema-arbitrary';
import { startServer, storedTables, type ServerProcess } from './server';

jest.setTimeout(600_000);

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
let s: ServerProcess;
let token: string;
let baseline: string;

beforeAll(async () => {
  s = await startServer();
  token = s.token();
  await storedWrite(s, 'INSERT INTO connections (workspace_id, ref, app, label, status, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
    'ws-1',
    'kv-main',
    'kv',
    null,
    'connected',
    new Date().toISOString(),
  ]);
  const hooked = await s
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent('Fixture'), slug: 'fixture', triggers: [{ kind: 'webhook', name: 'Hook' }] } });
  expect(hooked.response.status).toBe(201);
  await s.client().PUT('/api/build/agents', { body: { ...minimalAgent('Helper'), slug: 'helper' } });
  await s.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'fixture', name: 'Fixture', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
  });
  await s.client().PUT('/api/build/skills', { body: { kind: 'service.skill/v1', name: 'fixture', description: 'Fixture.', body: 'Fixture.' } });
  baseline = await storedState();
});
afterAll(() => s.dispose());

/** Everything a request could have written. */
function storedState(): Promise<string> {
  return storedTables(s, ['agents', 'workflows', 'skills', 'runs', 'agent_triggers', 'kv_entries']);
}

const anyText = fc.string({ maxLength: 20, unit: fc.constantFrom(...'abc xyz'.split('')) });
// A document in a space its author belongs to: the workspace's, or a team the fixtures' token names none of (null).
const spaceHint = fc.constant({ team: null });
const agentHints: Hints = {
  '.space': spaceHint,
  // Workflows of the workspace (the fixture's), as an agent's workflows must name.
  '.workflows': fc.constantFrom([], ['fixture']),
  // Skills that exist: the repository's marketplace (skills/), and the fixture's workspace skill.
  '.skills': fc.constantFrom([], ['kv-records', 'careful-writes']),
  '.workspace_skills': fc.constantFrom([], ['fixture']),
  '.model': fc.constant('builtin/scripted'),
  '.tools.apps[]': fc.constantFrom('core', 'kv', 'http', 'time'),
  '.tools.disabled_tools[]': fc.constantFrom('kv.delete', 'core.fail', 'http.request'),
  // 'all': a listed connection must be one of an app the agent uses, which the apps generated need not include.
  '.tools.connections': fc.constant('all'),
  // A WhatsApp channel names a connection of the workspace, which the fixture's has none of.
  '.whatsapp': fc.oneof(fc.constant({}), fc.record({ enabled: fc.boolean() })),
  '.schedule': fc.oneof(
    fc.constant({}),
    fc.record({
      enabled: fc.boolean(),
      cron: fc.constantFrom('0 7 * * 1-5', '*/15 * * * *', '@daily'),
      timezone: fc.constantFrom('UTC', 'Europe/Berlin'),
      prompt: anyText,
    }),
  ),
  '.triggers[].id': 'omit',
  '.triggers[].tool': fc.constantFrom('kv.get', 'kv.list', 'time.now'),
  '.triggers[].cron': fc.constantFrom('*/5 * * * *', '0 9 * * MON'),
  '.triggers[].timezone': fc.constantFrom('UTC', 'America/New_York'),
  '.triggers[].app': fc.constant('kv'),
  // Events the kv app declares (or their family): an app_event trigger must name one.
  '.triggers[].event': fc.constantFrom('key.set', 'key.deleted', 'key'),
  '.triggers[].connection': fc.constant('kv-main'),
  // Criteria that meet the write-time rules (unique ids, linear patterns, compilable schemas, known tools).
  '.eval_criteria': fc.subarray(
    [
      'Answers politely',
      { type: 'contains', value: 'done', ignore_case: true },
      { type: 'regex', id: 'ticket', pattern: '[A-Z]{3}-\\d+' },
      { type: 'json_schema', schema: { type: 'object', required: ['ok'] } },
      { type: 'tool_args_match', tool: 'kv.set', args: { key: 'k' }, match: 'partial' },
      { type: 'tool_sequence', tools: ['kv.get', 'kv.set'] },
      { type: 'run_status', status: 'succeeded' },
      { type: 'judge', id: 'helpful', rubric: 'Is helpful', threshold: 0.7 },
    ],
    { maxLength: 4 },
  ),
};

const stepIds = ['fetch', 'shape', 'store', 'notify'];
const workflowSteps = fc
  .integer({ min: 1, max: 4 })
  .chain((count) =>
    fc.tuple(
      ...stepIds
        .slice(0, count)
        .map((id, i) =>
          fc
            .tuple(
              fc.boolean(),
              fc.subarray(stepIds.slice(0, i)),
              fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.oneof(fc.integer(), anyText), { maxKeys: 3 }),
            )
            .map(([agentStep, after, args]) =>
              agentStep ? { id, kind: 'agent', agent: 'helper', prompt: `Step ${id}`, after } : { id, kind: 'tool', tool: 'core.echo', args, after },
            ),
        ),
    ),
  );
const workflowHints: Hints = {
  '.space': spaceHint,
  '.steps': workflowSteps,
  '.schedule': fc.option(fc.record({ cron: fc.constantFrom('0 7 * * 1-5', '30 2 1 * *'), timezone: fc.constantFrom('UTC', 'Asia/Tokyo') }), { nil: null }),
};

interface Operation {
  name: string;
  schema: string;
  hints: Hints;
  send: (body: unknown) => Promise<Response>;
}

const request = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${s.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });

const operations: Operation[] = [
  { name: 'validateAgent', schema: 'AgentDraft', hints: agentHints, send: (b) => request('POST', '/api/build/agents/validate', b) },
  { name: 'createAgent', schema: 'AgentCreate', hints: agentHints, send: (b) => request('PUT', '/api/build/agents', b) },
  { name: 'replaceAgent', schema: 'AgentReplace', hints: agentHints, send: (b) => request('PUT', '/api/build/agents/fixture', b, { 'if-match': '*' }) },
  { name: 'setAgentStatus', schema: 'AgentStatusRequest', hints: {}, send: (b) => request('POST', '/api/build/agents/fixture/status', b, { 'if-match': '*' }) },
  { name: 'testAgent', schema: 'AgentTestRequest', hints: {}, send: (b) => request('POST', '/api/build/agents/fixture/test', b) },
  { name: 'rotateWebhook', schema: 'RotateWebhookRequest', hints: {}, send: (b) => request('POST', '/api/build/agents/fixture/rotate-webhook', b) },
  { name: 'validateWorkflow', schema: 'WorkflowDraft', hints: workflowHints, send: (b) => request('POST', '/api/build/workflows/validate', b) },
  { name: 'createWorkflow', schema: 'WorkflowCreate', hints: workflowHints, send: (b) => request('PUT', '/api/build/workflows', b) },
  {
    name: 'replaceWorkflow',
    schema: 'WorkflowReplace',
    hints: workflowHints,
    send: (b) => request('PUT', '/api/build/workflows/fixture', b, { 'if-match': '*' }),
  },
  { name: 'testWorkflow', schema: 'WorkflowTestRequest', hints: {}, send: (b) => request('POST', '/api/build/workflows/fixture/test', b) },
];

async function expectError(res: Response, statuses: number[]): Promise<string> {
  const text = await res.text();
  if (!statuses.includes(res.status)) throw new Error(`expected ${statuses.join('/')}, got ${res.status}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(Object.keys(body)).toEqual(['error']);
  expect(typeof body.error).toBe('string');
  return body.error as string;
}

test('documents generated from the spec are accepted by validate', async () => {
  const validates = operations.filter((op) => op.name.startsWith('validate'));
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...validates).chain((op) => arbitraryFor(schemaNamed(op.schema), op.hints).map((doc) => ({ op, doc }))),
      async ({ op, doc }) => {
        const res = await op.send(doc);
        if (res.status !== 200) throw new Error(`${op.name} refused a valid document: ${res.status} ${await res.text()}`);
        const body = (await res.json()) as { data: { valid: boolean } };
        expect(body.data.valid).toBe(true);
      },
    ),
    { seed: SEED, numRuns: Math.ceil(RUNS / 4) },
  );
});

test('every single schema mutation of a valid body is a 400 that names the field', async () => {
  // Cases carry plain data (the operation's name, the mutated body), so a counterexample reads well.
  const cases = fc.constantFrom(...operations.map((op) => op.name)).chain((name) => {
    const op = operations.find((o) => o.name === name)!;
    return arbitraryFor(schemaNamed(op.schema), op.hints).chain((doc) => {
      const mutations = mutationsOf(doc, schemaNamed(op.schema));
      return fc.constantFrom(...mutations).map((mutation) => ({ name, rule: mutation.rule, path: mutation.path, body: mutation.apply(doc) }));
    });
  });
  await fc.assert(
    fc.asyncProperty(cases, async ({ name, rule, path, body }) => {
      const res = await operations.find((o) => o.name === name)!.send(body);
      const error = await expectError(res, [400]);
      if (!error.includes(path)) throw new Error(`${name}, ${rule} at ${path}: the error does not name it: ${error}`);
    }),
    { seed: SEED, numRuns: Math.ceil((RUNS * 3) / 4) },
  );
});

describe('garbage', () => {
  const bodyOps = operations;

  test('random bytes and truncated JSON: 4xx with { error }', async () => {
    const valid = JSON.stringify({ ...minimalAgent('Cut'), triggers: [{ kind: 'webhook', name: 'x' }] });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...bodyOps),
        fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 512 }),
          fc.integer({ min: 1, max: valid.length - 1 }).map((cut) => valid.slice(0, cut)),
        ),
        async (op, body) => {
          await expectError(await op.send(body), [400, 415]);
        },
      ),
      { seed: SEED, numRuns: Math.ceil(RUNS / 10) },
    );
  });

  test('deep nesting, 64 KiB + 1, multi-megabyte bodies', async () => {
    const deep = `{"kind":"service.workflow/v1","slug":"deep","name":"Deep","steps":[{"id":"a","kind":"tool","tool":"core.echo","args":{"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}]}`;
    expect(await expectError(await request('PUT', '/api/build/workflows', deep), [400])).toBe('body: nested deeper than 64 levels');
    const justOver = JSON.stringify({ ...minimalAgent('Big'), instructions: '' }).replace('"instructions":""', `"instructions":"${'x'.repeat(65_537)}"`);
    const exact = Buffer.from(justOver).subarray(0, 65_537);
    expect(exact.length).toBe(65_537);
    expect(await expectError(await request('POST', '/api/build/agents/validate', exact), [413])).toBe('body is over the 65536-byte limit');
    const huge = Buffer.alloc(5 * 1024 * 1024, 0x20);
    expect(await expectError(await request('PUT', '/api/build/agents', huge), [413])).toBe('body is over the 65536-byte limit');
  });

  test('NUL, lone surrogates, __proto__ and constructor keys, huge numbers: never a 5xx', async () => {
    // U+0000 is refused wherever it is (PostgreSQL's text cannot hold it), and so are lone surrogates (no UTF-8 holds them).
    const nul = { ...minimalAgent('N\u0000ul'), instructions: '\udfff\u0000' };
    expect(await expectError(await request('POST', '/api/build/agents/validate', nul), [400])).toBe('body.name: must not contain the character U+0000 (NUL)');
    const strange = { ...minimalAgent('Lone \ud800 surrogate'), instructions: '\udfff' };
    expect(await expectError(await request('POST', '/api/build/agents/validate', strange), [400])).toBe(
      'body.name: must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair): the text must be valid Unicode',
    );

    const proto =
      '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"kind":"service.workflow/v1","slug":"p","name":"P","steps":[{"id":"a","kind":"tool","tool":"core.echo","args":{"__proto__":{"polluted":true}}}]}';
    const error = await expectError(await request('POST', '/api/build/workflows/validate', proto), [400]);
    expect(error).toBe('body.__proto__: the member name __proto__ is refused (it names the prototype of every JavaScript object)');
    const inArgs = (args: string) =>
      `{"kind":"service.workflow/v1","slug":"p","name":"P","steps":[{"id":"a","kind":"tool","tool":"core.echo","args":${args}}]}`;
    const escaped = await expectError(
      await request('POST', '/api/build/workflows/validate', inArgs('{"constructor":1,"\\u005f_proto__":{"polluted":true}}')),
      [400],
    );
    expect(escaped).toBe('body.steps[0].args.__proto__: the member name __proto__ is refused (it names the prototype of every JavaScript object)');
    const ok = await request('POST', '/api/build/workflows/validate', inArgs('{"constructor":1,"prototype":{"polluted":true}}'));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: { document: { steps: { args: Record<string, unknown> }[] } } }).data.document.steps[0]!.args).toEqual({
      constructor: 1,
      prototype: { polluted: true },
    });

    expect(
      await expectError(
        await request('POST', '/api/build/agents/validate', JSON.stringify(minimalAgent('Num')).replace('"max_steps":1', '"max_steps":1e400')),
        [400],
      ),
    ).toBe('body.max_steps: 1e400 is beyond the range of a double (±1.7976931348623157e308)');
    expect(
      await expectError(
        await request(
          'POST',
          '/api/build/agents/validate',
          JSON.stringify(minimalAgent('Num')).replace('"max_steps":1', '"max_steps":123456789012345678901234567890'),
        ),
        [400],
      ),
    ).toMatch(/^body\.max_steps: 123456789012345678901234567890 is an integer beyond ±9007199254740991/);
  });

  test('after all of it: the process is up, healthy, and nothing was stored', async () => {
    expect((await fetch(`${s.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${s.baseUrl}/readyz`)).status).toBe(200);
    expect(await storedState()).toBe(baseline);
    expect(s.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
  });
});
