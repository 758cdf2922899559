// eval_criteria at write time (docs/evals.md): rubrics and typed checks are stored as sent; a check
// that breaks a rule is 400 naming its path, and nothing is written.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const TYPED = [
  "Answers in the customer's language",
  { type: 'contains', id: 'greets', value: 'Hello', ignore_case: true },
  { type: 'not_contains', value: 'refund' },
  { type: 'regex', pattern: '(a+)+$' },
  { type: 'equals', value: 'done' },
  { type: 'is_json' },
  {
    type: 'json_schema',
    schema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' }, code: { type: 'string', pattern: '^[A-Z]{3}$' } } },
  },
  { type: 'tool_called', tool: 'kv.set' },
  { type: 'tool_not_called', tool: 'http.request' },
  { type: 'tool_args_match', tool: 'kv.set', args: { key: 'ticket' }, match: 'partial' },
  { type: 'tool_sequence', tools: ['kv.get', 'kv.set'], strict: true },
  { type: 'max_steps', value: 4 },
  { type: 'max_credits', value: 10 },
  { type: 'run_status', status: 'succeeded' },
  { type: 'judge', id: 'polite', rubric: 'Is polite', threshold: 0.8 },
  { type: 'tool_called', tool: 'workflows.triage' },
] as const;

const create = (criteria: unknown[]) => t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Graded'), eval_criteria: criteria as never } });

test('rubrics and every kind of typed check are stored as sent', async () => {
  const res = await create([...TYPED]);
  expect(res.response.status).toBe(201);
  expect(res.data!.data.document.eval_criteria).toEqual(TYPED);
  const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: res.data!.data.document.id } } });
  expect(read.data!.data.eval_criteria).toEqual(TYPED);
});

test.each([
  [[{ type: 'regex', pattern: '(a)\\1' }], 'body.eval_criteria[0].pattern: is not a pattern the linear-time engine takes'],
  [[{ type: 'regex', pattern: '(?=x)' }], 'body.eval_criteria[0].pattern: is not a pattern the linear-time engine takes'],
  [['x', { type: 'json_schema', schema: { type: 'string', pattern: '(?<=a)b' } }], 'body.eval_criteria[1].schema: is not a JSON Schema this service can apply'],
  [[{ type: 'json_schema', schema: { $ref: 'https://example.com/s.json' } }], 'body.eval_criteria[0].schema: is not a JSON Schema this service can apply'],
  [[{ type: 'json_schema', schema: { description: 'x'.repeat(9000) } }], 'body.eval_criteria[0].schema: is 9018 bytes as JSON; at most 8192'],
  [[{ type: 'tool_called', tool: 'kv.sett' }], "body.eval_criteria[0].tool: 'kv.sett' is not a tool of the catalog"],
  [[{ type: 'tool_sequence', tools: ['kv.get', 'nope.x'] }], "body.eval_criteria[0].tools[1]: 'nope.x' is not a tool of the catalog"],
  [['Same', 'Same'], "body.eval_criteria[1]: its id 'c_"],
  [
    [
      { type: 'contains', id: 'a', value: 'x' },
      { type: 'is_json', id: 'a' },
    ],
    "body.eval_criteria[1]: its id 'a' is also that of body.eval_criteria[0]",
  ],
])('a check that breaks a rule is 400 naming its path (case %#)', async (criteria, message) => {
  const res = await create(criteria);
  expect(res.response.status).toBe(400);
  expect(res.error!.error).toContain(message);
});

test.each([
  [[{ type: 'contains' }], 'body.eval_criteria[0].value: required'],
  [[{ type: 'shout', value: 'x' }], 'body.eval_criteria[0].type: must be one of'],
  [[{ type: 'max_steps', value: 0 }], 'body.eval_criteria[0].value: must be >= 1'],
  [[{ type: 'contains', value: 'x', extra: 1 }], 'body.eval_criteria[0].extra: not allowed here'],
  [[{ type: 'contains', id: 'Bad Id', value: 'x' }], 'body.eval_criteria[0].id: must be text matching'],
  [[''], 'body.eval_criteria[0]: must be at least 1 character long'],
  [Array.from({ length: 21 }, (_, i) => `criterion ${i}`), 'body.eval_criteria: must have at most 20 items'],
])('a check its schema refuses is 400 naming its path and rule (case %#)', async (criteria, message) => {
  const res = await create(criteria);
  expect(res.response.status).toBe(400);
  expect(res.error!.error).toContain(message);
  expect((await t.client().GET('/api/build/agents')).data!.data.filter((a) => a.name === 'Graded')).toHaveLength(1); // the first case's only
});
