// A body is read as exactly what was sent or refused (400 naming where), on either store: numbers
// no double holds as written, lone surrogates, repeated member names; what is accepted reads back
// unchanged (a property over random documents), and run data that holds a lone surrogate reaches
// no tool.
import fc from 'fast-check';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun } from '../helpers/runs';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const send = async (method: string, path: string, text: string) => {
  const res = await fetch(`${t.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' }, body: text });
  return { status: res.status, body: (await res.json()) as { error?: string; data?: unknown } };
};

const workflowWithArgs = (slug: string, args: string) =>
  `{"kind":"service.workflow/v1","slug":"${slug}","name":"Exact","steps":[{"id":"a","kind":"tool","tool":"core.echo","args":${args}}]}`;

async function stored(kind: 'workflows' | 'agents'): Promise<string[]> {
  const res = await fetch(`${t.baseUrl}/api/build/${kind}`, { headers: { authorization: `Bearer ${t.token()}` } });
  return ((await res.json()) as { data: { slug: string }[] }).data.map((d) => d.slug);
}

test("the review's numbers: refused with 400 naming each, nothing written", async () => {
  const probes: [string, string][] = [
    ['{"big":12345678901234567890}', 'body.steps[0].args.big: 12345678901234567890 is an integer beyond ±9007199254740991'],
    ['{"ok":1,"inf":1e400}', 'body.steps[0].args.inf: 1e400 is beyond the range of a double'],
    ['{"tiny":1e-400}', 'body.steps[0].args.tiny: 1e-400 is too small for a double and would become 0'],
    ['{"deep":[[{"n":-9007199254740993}]]}', 'body.steps[0].args.deep[0][0].n: -9007199254740993 is an integer beyond'],
    ['{"pi":3.14159265358979323846264338}', 'body.steps[0].args.pi: 3.14159265358979323846264338 has more significant digits than a double keeps'],
  ];
  for (const [args, error] of probes) {
    const res = await send('PUT', '/api/build/workflows', workflowWithArgs('numbers', args));
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(error);
  }
  const defaults = `{"kind":"service.workflow/v1","slug":"numbers","name":"N","inputs":{"x":{"default":1e400}},"steps":[{"id":"a","kind":"tool","tool":"core.echo","args":{}}]}`;
  expect((await send('PUT', '/api/build/workflows', defaults)).body.error).toMatch(/^body\.inputs\.x\.default: 1e400 is beyond the range of a double/);
  expect(await stored('workflows')).not.toContain('numbers');

  const withInput = `{"kind":"service.workflow/v1","slug":"runs-input","name":"I","inputs":{"x":{"description":"a number"}},"steps":[{"id":"a","kind":"tool","tool":"core.echo","args":{"x":"{{inputs.x}}"}}]}`;
  const created = await send('PUT', '/api/build/workflows', withInput);
  expect([created.status, created.body.error]).toEqual([201, undefined]);
  const run = await send('POST', '/api/build/workflows/runs-input/test', '{"input":{"x":1e400}}');
  expect([run.status, run.body.error]).toEqual([400, 'body.input.x: 1e400 is beyond the range of a double (±1.7976931348623157e308)']);
  // Doubles as encoders write them are kept exactly, the extremes included.
  const extremes = '{"max":1.7976931348623157e308,"min":5e-324,"safe":-9007199254740991,"tenth":0.1,"sum":0.30000000000000004,"e":1e21}';
  const kept = await send('PUT', '/api/build/workflows', workflowWithArgs('extremes', extremes));
  expect(kept.status).toBe(201);
  expect((kept.body.data as { document: { steps: { args: unknown }[] } }).document.steps[0]!.args).toEqual(JSON.parse(extremes));
});

test('lone surrogates in names, member names, prompts and inputs: 400 naming where', async () => {
  const rule = 'must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair): the text must be valid Unicode';
  const named = await send('PUT', '/api/build/agents', JSON.stringify(minimalAgent('lone\ud800x')));
  expect([named.status, named.body.error]).toEqual([400, `body.name: ${rule}`]);
  const member = await send('PUT', '/api/build/workflows', workflowWithArgs('surrogates', '{"a":{"k\\udfff":1}}'));
  expect([member.status, member.body.error]).toEqual([400, `body.steps[0].args.a["k\\udfff"]: ${rule}`]);
  expect((await send('PUT', '/api/build/agents', JSON.stringify({ ...minimalAgent('Prompted'), slug: 'prompted' }))).status).toBe(201);
  const prompt = await send('POST', '/api/build/agents/prompted/test', '{"prompt":"hi \\udc00"}');
  expect([prompt.status, prompt.body.error]).toEqual([400, `body.prompt: ${rule}`]);
  // A pair, escaped or not, is a character like any other.
  const paired = await send('PUT', '/api/build/workflows', workflowWithArgs('pairs', '{"e":"\\ud83d\\ude00","r":"😀"}'));
  expect(paired.status).toBe(201);
  expect((paired.body.data as { document: { steps: { args: unknown }[] } }).document.steps[0]!.args).toEqual({ e: '😀', r: '😀' });
  expect(await stored('agents')).not.toContain('lone-x');
  expect(await stored('workflows')).not.toContain('surrogates');
});

test("a lone surrogate a run makes (the model's arguments) reaches no tool: kv keys stay distinct and findable", async () => {
  const agent = {
    ...minimalAgent('Kv writer'),
    slug: 'kv-writer',
    max_steps: 3,
    tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
  };
  expect((await send('PUT', '/api/build/agents', JSON.stringify(agent))).status).toBe(201);
  const started = await send(
    'POST',
    '/api/build/agents/kv-writer/test',
    JSON.stringify({ prompt: '/call kv.set {"key":"sur-\\ud800","value":1}\n/call kv.list {"prefix":"sur-"}' }),
  );
  expect(started.status).toBe(202);
  const run = await waitForAgentRun(t, (started.body.data as { run_id: string }).run_id);
  expect(run.tool_calls[0]).toMatchObject({ tool: 'kv.set', status: 'failed' });
  expect(run.tool_calls[0]!.error).toContain('args.key: must not contain a lone surrogate');
  expect(run.tool_calls[1]).toMatchObject({ tool: 'kv.list', status: 'succeeded', output: { keys: [] } });
});

test('a repeated member name, at any depth and however escaped: 400 naming it, nothing written', async () => {
  const agent = JSON.stringify({ ...minimalAgent('Twice'), slug: 'twice' });
  const twice = agent.replace('"approval":"write"', '"approval":"write","approval":"destructive"');
  expect(twice).not.toBe(agent);
  const res = await send('PUT', '/api/build/agents', twice);
  expect([res.status, res.body.error]).toEqual([
    400,
    'body.tools.approval: is a duplicate member name (each member may appear once in an object, as RFC 7493 requires)',
  ]);
  const deep = `{"l":${'[{"x":'.repeat(20)}{"a":1,"\\u0061":2}${'}]'.repeat(20)}}`;
  const nested = await send('PUT', '/api/build/workflows', workflowWithArgs('deep-twice', deep));
  expect([nested.status, nested.body.error]).toEqual([
    400,
    `body.steps[0].args.l${'[0].x'.repeat(20)}.a: is a duplicate member name (each member may appear once in an object, as RFC 7493 requires)`,
  ]);
  expect(await stored('agents')).not.toContain('twice');
  expect(await stored('workflows')).not.toContain('deep-twice');
});

// JSON values any encoder writes (doubles, well-formed text, unique names), less what is refused
// whatever its form: integers beyond 2^53−1, members named __proto__, U+0000.
const hasRefused = (value: unknown): boolean =>
  typeof value === 'number'
    ? Number.isInteger(value) && Math.abs(value) > Number.MAX_SAFE_INTEGER
    : value !== null && typeof value === 'object' && Object.entries(value).some(([k, v]) => k === '__proto__' || hasRefused(v));
const args = fc
  .dictionary(fc.string({ minLength: 1, maxLength: 8, unit: 'grapheme' }), fc.jsonValue({ maxDepth: 3, stringUnit: 'grapheme' }), { maxKeys: 6 })
  .filter((value) => !hasRefused(value) && !JSON.stringify(value).includes('\\u0000'));

test('property: a document with random JSON in its arguments reads back exactly as sent', async () => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(args, async (value) => {
      const slug = `round-trip-${++n}`;
      const sent = JSON.stringify(value);
      const created = await send('PUT', '/api/build/workflows', workflowWithArgs(slug, sent));
      expect(created.status).toBe(201);
      const read = await fetch(`${t.baseUrl}/api/build/workflows/${slug}`, { headers: { authorization: `Bearer ${t.token()}` } });
      const document = ((await read.json()) as { data: { steps: { args: unknown }[] } }).data;
      expect(JSON.stringify(document.steps[0]!.args)).toBe(sent);
    }),
    { numRuns: 40 },
  );
});
