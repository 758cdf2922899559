// What one run may render, hold, return and wait for is bounded (runtime/limits.ts): each limit
// fails the step (and the run) with an error naming its setting, before the large value is built,
// and the run's credits are settled as for any failure. The limits are set small here so that a
// few kilobytes cross them; the reliability suite runs the amplifying workflow at the defaults.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';
import type { components } from '../../generated/api';

type WorkflowCreate = components['schemas']['WorkflowCreate'];
type Step = WorkflowCreate['steps'][number];

const KiB = 1024;
let t: TestService;
beforeAll(async () => {
  t = await startService({
    RUN_STEP_OUTPUT_BYTES: String(16 * KiB),
    RUN_TEMPLATE_BYTES: String(8 * KiB),
    RUN_RENDER_BYTES: String(40 * KiB),
    RUN_STATE_BYTES: String(32 * KiB),
    RUN_OUTPUT_BYTES: String(2 * KiB),
    RUN_TOOL_TIMEOUT_SECONDS: '1',
  });
});
afterAll(() => t.close());

let n = 0;
async function runWorkflow(steps: Step[], opts: { input?: Record<string, unknown>; output?: string; inputs?: WorkflowCreate['inputs'] } = {}) {
  const slug = `limits-${++n}`;
  const created = await t.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug, name: slug, inputs: opts.inputs ?? { text: {} }, steps, output: opts.output ?? null },
  });
  expect(created.response.status).toBe(201);
  const started = await t
    .client()
    .POST('/api/build/workflows/{ref}/test', { params: { path: { ref: slug } }, body: { input: opts.input ?? { text: 'x'.repeat(1000) } } });
  expect(started.response.status).toBe(202);
  return waitForWorkflowRun(t, started.data!.data.run_id, undefined, 10_000);
}

const credits = () => t.service.store.workspaces.credits('ws-1', t.config.defaultCredits);
const repeat = (ref: string, times: number) => `{{${ref}}}`.repeat(times);

test("core.template repeating its input past a call's output limit: refused before it is built", async () => {
  const before = await credits();
  const run = await runWorkflow([
    { id: 'grow', kind: 'tool', tool: 'core.template', args: { template: repeat('v', 40), values: { v: '{{inputs.text}}' } } },
    { id: 'after', kind: 'tool', tool: 'core.echo', args: {}, after: ['grow'] },
  ]);
  expect(run.status).toBe('failed');
  expect(run.error).toBe(`step 'grow' failed: the output of core.template is larger than ${16 * KiB} bytes (RUN_STEP_OUTPUT_BYTES)`);
  expect(run.step_results.grow).toMatchObject({ status: 'failed', output: null });
  expect(run.step_results.after!.status).toBe('skipped');
  // One step executed and paid; the second step's reservation came back.
  expect(before - (await credits())).toBe(1);
});

test("a step's rendered arguments past the template limit", async () => {
  const run = await runWorkflow([{ id: 'echo', kind: 'tool', tool: 'core.echo', args: { many: Array(9).fill('{{inputs.text}}') } }]);
  expect(run.error).toBe(`step 'echo' failed: its arguments would be larger than ${8 * KiB} bytes once rendered (RUN_TEMPLATE_BYTES)`);
});

test('what a run renders in all, across steps', async () => {
  // Each step renders 7 copies (about 7 KB: under the template limit) and keeps nothing (its pick
  // finds no member); the sixth passes 40 KiB.
  const steps: Step[] = Array.from({ length: 6 }, (_, i) => ({
    id: `s${i}`,
    kind: 'tool',
    tool: 'core.pick',
    args: { value: Array(7).fill('{{inputs.text}}'), path: 'none' },
    after: i ? [`s${i - 1}`] : [],
  }));
  const run = await runWorkflow(steps);
  expect(run.status).toBe('failed');
  expect(run.error).toBe(`step 's5' failed: the run would render more than ${40 * KiB} bytes in all (RUN_RENDER_BYTES)`);
});

test("the run's state: outputs that each fit but together do not", async () => {
  // 7 KB stored by one run; read five times by the next, which renders next to nothing.
  expect((await runWorkflow([{ id: 'store', kind: 'tool', tool: 'kv.set', args: { key: 'seven', value: Array(7).fill('{{inputs.text}}') } }])).status).toBe(
    'succeeded',
  );
  const steps: Step[] = Array.from({ length: 5 }, (_, i) => ({
    id: `e${i}`,
    kind: 'tool',
    tool: 'kv.get',
    args: { key: 'seven' },
    after: i ? [`e${i - 1}`] : [],
  }));
  const run = await runWorkflow(steps);
  expect(run.error).toBe(`step 'e4' failed: the run's state would be larger than ${32 * KiB} bytes (RUN_STATE_BYTES)`);
  expect(run.step_results.e4!.output).toBeNull();
  expect(run.step_results.e3!.status).toBe('succeeded');
});

test("the run's output", async () => {
  const run = await runWorkflow([{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }], { output: repeat('inputs.text', 3) });
  expect(run.status).toBe('failed');
  expect(run.error).toBe(`the run's output is larger than ${2 * KiB} bytes (RUN_OUTPUT_BYTES)`);
  expect(run.output).toBeNull();
});

test("a tool call's wall time", async () => {
  const run = await runWorkflow([{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 2000 } }]);
  expect(run.error).toBe("step 'nap' failed: core.sleep took longer than 1 s (RUN_TOOL_TIMEOUT_SECONDS)");
});

test('an agent run whose tool results pass the state limit fails, naming it; so does a final text past the output limit', async () => {
  const put = await t.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Hoarder'),
      slug: 'hoarder',
      max_steps: 20,
      tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
    },
  });
  expect(put.response.status).toBe(201);
  // A prompt is at most 4,000 characters: each call repeats 300 of them 20 times in its output,
  // which the run keeps twice (the call's record and the model's message).
  const calls = Array.from({ length: 7 }, () => `/call core.template {"template":"${'{{v}}'.repeat(20)}","values":{"v":"${'y'.repeat(300)}"}}`).join('\n');
  const started = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: 'hoarder' } }, body: { prompt: `Keep it all.\n${calls}` } });
  expect(started.response.status).toBe(202);
  const run = await waitForAgentRun(t, started.data!.data.run_id, undefined, 10_000);
  expect(run.status).toBe('failed');
  expect(run.error).toBe(`the run's state would be larger than ${32 * KiB} bytes (RUN_STATE_BYTES)`);

  // No tool calls: the scripted model answers with the prompt itself, here over 2 KiB.
  const chatty = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: 'hoarder' } }, body: { prompt: 'z'.repeat(3 * KiB) } });
  const answered = await waitForAgentRun(t, chatty.data!.data.run_id);
  expect([answered.status, answered.error, answered.final_text]).toEqual([
    'failed',
    `the run's output is larger than ${2 * KiB} bytes (RUN_OUTPUT_BYTES)`,
    null,
  ]);
});

test('the kv store keeps a workspace within its number of keys: a new key past it is refused in the write, an existing one still updates', async () => {
  const kv = t.service.store.kv;
  const ws = `kv-limit-${Date.now()}`;
  for (const key of ['a', 'b', 'c']) expect(await kv.set(ws, key, 1, 3)).toBe(true);
  expect(await kv.set(ws, 'd', 1, 3)).toBe(false);
  expect(await kv.get(ws, 'd')).toBeUndefined();
  expect(await kv.set(ws, 'a', 2, 3)).toBe(true);
  expect(await kv.get(ws, 'a')).toBe(2);
  expect(await kv.delete(ws, 'b')).toBe(true);
  expect(await kv.set(ws, 'd', 1, 3)).toBe(true);
  // Concurrent new keys (on SQLite one writer at a time; on PostgreSQL the same instant may pass by a few).
  const results = await Promise.all(['e', 'f', 'g', 'h'].map((key) => kv.set(ws, key, 1, 5)));
  expect(results.filter(Boolean).length).toBeGreaterThanOrEqual(2);
  expect((await kv.list(ws, '', 100)).length).toBeLessThanOrEqual(5 + 3);
});
