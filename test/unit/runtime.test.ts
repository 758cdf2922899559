import { renderText as renderWith, renderValue as renderValueWith, unlimitedBudget, type TemplateScope } from '../../src/domain/templates';
import { DEFAULT_RUN_LIMITS, renderBudget } from '../../src/runtime/limits';
import { needsApproval, toolsOf } from '../../src/runtime/agent-loop';
import { scriptedCalls } from '../../src/runtime/models/scripted';
import { isGlobalUnicast as isPublicAddress } from '../../src/apps/outbound/addresses';
import { runWorkflow, type WorkflowExecutorDeps } from '../../src/runtime/workflow-executor';
import { builtinApps } from '../../src/apps/registry';
import type { Agent, Workflow } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';

const renderText = (text: string, scope: TemplateScope) => renderWith(text, scope, unlimitedBudget());
const renderValue = (value: unknown, scope: TemplateScope) => renderValueWith(value, scope, unlimitedBudget());

describe('template rendering', () => {
  const scope = { inputs: { n: 3, name: 'Ada', obj: { a: [1, 2] } }, steps: { s: { deep: { x: true } } } };

  test('a whole-value reference keeps its JSON type', () => {
    expect(renderValue({ n: '{{inputs.n}}', o: '{{ inputs.obj }}', d: '{{steps.s.output.deep.x}}' }, scope)).toEqual({ n: 3, o: { a: [1, 2] }, d: true });
  });

  test('references inside text become text; missing paths are null or empty', () => {
    expect(renderText('Hi {{inputs.name}}, n={{inputs.n}}, o={{inputs.obj}}, m={{steps.s.output.nope}}', scope)).toBe('Hi Ada, n=3, o={"a":[1,2]}, m=');
    expect(renderValue('{{steps.s.output.nope}}', scope)).toBeNull();
    expect(renderValue(['{{name}} stays', 7], scope)).toEqual(['{{name}} stays', 7]);
  });
});

describe('tool access and approval', () => {
  const agent = (tools: Partial<Agent['tools']>) =>
    ({ ...minimalAgent(), tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval: 'write', ...tools } }) as unknown as Agent;

  test("the tools of the agent's apps minus the disabled ones", () => {
    expect([...toolsOf(agent({ disabled_tools: ['kv.delete', 'core.fail'] }), builtinApps()).keys()]).toEqual([
      'kv.get',
      'kv.list',
      'kv.set',
      'core.echo',
      'core.template',
      'core.pick',
      'core.sleep',
    ]);
  });

  test('write holds writes and destructive calls; destructive holds destructive calls only', () => {
    const [get, set, del] = ['kv.get', 'kv.set', 'kv.delete'].map((slug) => builtinApps().tools.get(slug)!);
    expect([get, set, del].map((tool) => needsApproval('write', tool!))).toEqual([false, true, true]);
    expect([get, set, del].map((tool) => needsApproval('destructive', tool!))).toEqual([false, false, true]);
  });
});

test('the scripted model reads /call lines in order; unparsable arguments are passed on for the tool to reject', () => {
  expect(scriptedCalls('intro\n/call kv.get {"key":"a"}\n  /call time.now\n/call core.echo {bad')).toEqual([
    { tool: 'kv.get', args: { key: 'a' } },
    { tool: 'time.now', args: {} },
    { tool: 'core.echo', args: { _unparsed: '{bad' } },
  ]);
});

test('public and special-purpose addresses', () => {
  for (const ok of ['93.184.216.34', '2606:4700::1111']) expect(isPublicAddress(ok)).toBe(true);
  for (const bad of [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:a00:1',
    'not-an-ip',
  ]) {
    expect(isPublicAddress(bad)).toBe(false);
  }
});

describe('workflow executor', () => {
  const step = (id: string, after: string[] = [], tool = 'core.echo', args: Record<string, unknown> = {}) => ({ id, kind: 'tool' as const, tool, args, after });
  const wf = (steps: Workflow['steps']): Workflow =>
    ({
      kind: 'service.workflow/v1',
      slug: 'w',
      name: 'W',
      description: null,
      enabled: true,
      updated_at: '',
      space: { team: null },
      send_as: null,
      inputs: {},
      schedule: null,
      steps,
      output: null,
    }) as Workflow;
  const deps = (overrides: Partial<WorkflowExecutorDeps> = {}): WorkflowExecutorDeps => ({
    apps: builtinApps(),
    tools: {
      workspaceId: 'w',
      kv: {} as never,
      http: { allowPrivate: false, timeoutMs: 1000, maxBytes: 1000 },
      limits: DEFAULT_RUN_LIMITS,
      budget: renderBudget(DEFAULT_RUN_LIMITS),
    },
    runAgentStep: async () => ({ ok: true, output: 'agent' }),
    chargeStep: async () => true,
    onProgress: async () => undefined,
    ...overrides,
  });

  test('independent steps run concurrently; a step starts only after all of its after list', async () => {
    const doc = wf([step('a', [], 'core.sleep', { ms: 30 }), step('b', [], 'core.sleep', { ms: 30 }), step('c', ['a', 'b'])]);
    const outcome = await runWorkflow(doc, {}, deps());
    expect(outcome.status).toBe('succeeded');
    const r = outcome.state.step_results;
    expect(r.b!.started_at! < r.a!.finished_at!).toBe(true); // b did not wait for a
    expect(r.c!.started_at! >= r.a!.finished_at! && r.c!.started_at! >= r.b!.finished_at!).toBe(true);
  });

  test('dependants of a failure are skipped even when listed before it', async () => {
    const doc = wf([step('late', ['mid']), step('mid', ['bad']), step('bad', [], 'core.fail', { message: 'x' })]);
    const outcome = await runWorkflow(doc, {}, deps());
    expect(Object.values(outcome.state.step_results).map((r) => r.status)).toEqual(['skipped', 'skipped', 'failed']);
  });

  test('a step the workspace cannot pay for fails the run', async () => {
    let credits = 1;
    const outcome = await runWorkflow(wf([step('a'), step('b', ['a'])]), {}, deps({ chargeStep: async () => credits-- > 0 }));
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toBe("step 'b' failed: credits exhausted: the workspace cannot pay for this step");
  });
});

test('rendering reads own members only: names of Object.prototype render as nothing, never as a function', () => {
  const scope = { inputs: { real: 1 } as Record<string, unknown>, steps: { s: { a: 1 } } as Record<string, unknown> };
  expect(renderText('[{{inputs.constructor}}][{{inputs.__proto__}}][{{inputs.real}}]', scope)).toBe('[][][1]');
  expect(renderValue('{{steps.s.output.constructor}}', scope)).toBeNull();
  expect(renderValue('{{steps.constructor.output}}', scope)).toBeNull();
});

test("kv.set refuses a value over KV_VALUE_BYTES, a new key past the workspace's KV_MAX_KEYS and a key holding U+0000, naming each", async () => {
  const invokeTool = builtinApps().invoke;
  const { KV_MAX_KEYS, KV_VALUE_BYTES } = await import('../../src/apps/builtin/kv');
  const full = { set: async () => false } as never;
  const roomy = { set: async () => true } as never;
  const ctx = (kv: never) => ({
    workspaceId: 'w',
    kv,
    http: { allowPrivate: false, timeoutMs: 1000, maxBytes: 1000 },
    limits: DEFAULT_RUN_LIMITS,
    budget: renderBudget(DEFAULT_RUN_LIMITS),
  });
  expect(await invokeTool('kv.set', { key: 'k', value: 'x'.repeat(KV_VALUE_BYTES) }, ctx(roomy))).toEqual({
    ok: false,
    error: `args.value: larger than ${KV_VALUE_BYTES} bytes as JSON, the most one key holds`,
  });
  expect(await invokeTool('kv.set', { key: 'k', value: 1 }, ctx(full))).toEqual({
    ok: false,
    error: `the workspace holds ${KV_MAX_KEYS} keys, the most it may; delete some (kv.delete) before adding another`,
  });
  expect(await invokeTool('kv.set', { key: 'k', value: 1 }, ctx(roomy))).toEqual({ ok: true, output: { key: 'k' } });
  // No store holds U+0000 in a key: the tool's schema refuses it, and the store is asked nothing.
  const untouched = {
    set: async () => {
      throw new Error('the store was asked');
    },
  } as never;
  expect(await invokeTool('kv.set', { key: 'k\u0000', value: 1 }, ctx(untouched))).toEqual({
    ok: false,
    error: 'invalid arguments for kv.set: args.key: must be text matching ^[^\\u0000]*$',
  });
});
