import { DEFAULT_LIMITS } from '../../src/config';
import { builtinApps } from '../../src/apps/registry';
import { ancestorsOf, findCycle } from '../../src/domain/dag';
import { cronProblem, isTimezone } from '../../src/domain/schedule';
import { checkAgent, checkWorkflow, type References } from '../../src/domain/semantics';
import { referencesIn, stringsIn } from '../../src/domain/templates';
import type { AgentDraft, WorkflowDraft } from '../../src/domain/types';
import { normaliseAgent } from '../../src/domain/agent';
import { normaliseWorkflow } from '../../src/domain/workflow';
import { minimalAgent } from '../helpers/fixtures';

const refs: References = {
  models: new Set(['builtin/scripted']),
  apps: builtinApps().apps,
  tools: builtinApps().tools,
  connections: new Map([
    ['kv-main', { ref: 'kv-main', app: 'kv', label: null, status: 'connected' }],
    ['web', { ref: 'web', app: 'http', label: null, status: 'connected' }],
  ]),
  connectionApps: new Set(),
  agents: new Set(['helper']),
  workflows: new Set(['refund-order']),
  skills: new Set(['pdf-forms']),
  marketplaceSkills: new Set(['kv-records']),
  limits: { ...DEFAULT_LIMITS },
};

const agent = (overrides: Partial<AgentDraft> = {}) => normaliseAgent({ ...minimalAgent(), ...overrides } as AgentDraft).document;
const agentProblems = (overrides: Partial<AgentDraft> = {}, r: References = refs, bytes = 100) =>
  checkAgent(agent(overrides), r, bytes).map((p) => `${p.path}: ${p.message}`);

describe('agent rules', () => {
  test('a valid agent has no problems', () => {
    expect(agentProblems({ tools: { apps: ['kv', 'core'], connections: ['kv-main'], disabled_tools: ['kv.delete'], approval: 'write' } })).toEqual([]);
  });

  test('model, apps, disabled tools and connections must exist', () => {
    expect(agentProblems({ model: 'gpt-9', tools: { apps: ['gitlab'], connections: ['nope'], disabled_tools: ['kv.drop'], approval: 'write' } })).toEqual([
      "body.model: 'gpt-9' is not a model of the catalog; GET /api/build/catalog lists them",
      "body.tools.apps[0]: 'gitlab' is not an app of the catalog; GET /api/build/catalog lists them",
      "body.tools.disabled_tools[0]: 'kv.drop' is not a tool of the catalog (GET /api/build/catalog/apps/{app} lists an app's tools)",
      "body.tools.connections[0]: 'nope' is not a connection of this workspace; GET /api/build/connections lists them",
    ]);
  });

  test("workspace_skills names skills of the workspace (skills are the whole workspace's, whatever the agent's space)", () => {
    expect(agentProblems({ workspace_skills: ['pdf-forms'], space: { team: 'finance' } })).toEqual([]);
    expect(agentProblems({ workspace_skills: ['pdf-forms', 'nope'] })).toEqual([
      "body.workspace_skills[1]: 'nope' is not a skill of this workspace; GET /api/build/skills lists them",
    ]);
  });

  test('max_steps within the agent_steps limit', () => {
    expect(agentProblems({ max_steps: 30 }, { ...refs, limits: { ...refs.limits, agent_steps: 20 } })).toEqual([
      "body.max_steps: must be <= 20 (the workspace's agent_steps limit)",
    ]);
  });

  test('schedule: cron required when enabled, cron parses, timezone is IANA', () => {
    expect(agentProblems({ schedule: { enabled: true } })).toEqual(['body.schedule.cron: required when schedule.enabled is true']);
    expect(agentProblems({ schedule: { cron: '61 * * * *', timezone: 'Mars/Olympus' } })).toEqual([
      "body.schedule.cron: '61 * * * *' is not a valid cron expression (Invalid value for minute: 61)",
      "body.schedule.timezone: 'Mars/Olympus' is not an IANA timezone (such as Europe/Berlin or UTC)",
    ]);
  });

  test('poll triggers: the detector exists and is read-only, cron and timezone valid', () => {
    const poll = (tool: string, cron = '*/5 * * * *', timezone = 'UTC') => ({ kind: 'poll' as const, name: 'P', tool, cron, timezone });
    expect(agentProblems({ triggers: [poll('kv.list')] })).toEqual([]);
    expect(agentProblems({ triggers: [poll('kv.set'), poll('kv.nope'), poll('kv.get', '0 0 31 2 *', '+01:00')] })).toEqual([
      "body.triggers[0].tool: 'kv.set' is not read-only; a poll trigger's detector must be a read-only tool",
      "body.triggers[1].tool: 'kv.nope' is not a tool of the catalog (GET /api/build/catalog/apps/{app} lists an app's tools)",
      "body.triggers[2].cron: '0 0 31 2 *' never fires (no date matches it)",
      "body.triggers[2].timezone: '+01:00' is not an IANA timezone (such as Europe/Berlin or UTC)",
    ]);
  });

  test('app_event triggers: the app exists and declares the event (or its family), and the connection is one of that app', () => {
    const event = (app: string, connection: string, name = 'key.set') => ({ kind: 'app_event' as const, name: 'E', app, event: name, connection });
    expect(agentProblems({ triggers: [event('kv', 'kv-main'), event('kv', 'kv-main', 'key.deleted'), event('kv', 'kv-main', 'key')] })).toEqual([]);
    expect(
      agentProblems({ triggers: [event('gitlab', 'gh'), event('kv', 'web'), event('kv', 'kv-main', 'changed'), event('kv', 'kv-main', 'key.se')] }),
    ).toEqual([
      "body.triggers[0].app: 'gitlab' is not an app of the catalog; GET /api/build/catalog lists them",
      "body.triggers[0].connection: 'gh' is not a connection of this workspace; GET /api/build/connections lists them",
      "body.triggers[1].connection: 'web' is a connection of app 'http', not of 'kv'",
      "body.triggers[2].event: 'changed' is not an event of app 'kv' (its events: key.set, key.deleted)",
      "body.triggers[3].event: 'key.se' is not an event of app 'kv' (its events: key.set, key.deleted)",
    ]);
  });

  test('trigger count and document size within the workspace limits', () => {
    const small = { ...refs, limits: { ...refs.limits, triggers_per_agent: 1, document_bytes: 50 } };
    const hooks = [
      { kind: 'webhook' as const, name: 'A' },
      { kind: 'webhook' as const, name: 'B' },
    ];
    expect(agentProblems({ triggers: hooks }, small, 51)).toEqual([
      'body: the document as stored is 51 bytes; the workspace limit is 50',
      'body.triggers: has 2 triggers; the workspace limit is 1',
    ]);
  });
});

const workflow = (steps: WorkflowDraft['steps'], extra: Partial<WorkflowDraft> = {}) =>
  normaliseWorkflow({ kind: 'service.workflow/v1', slug: 'w', name: 'W', steps, ...extra }).document;
const workflowProblems = (steps: WorkflowDraft['steps'], extra: Partial<WorkflowDraft> = {}, r = refs) =>
  checkWorkflow(workflow(steps, extra), r, 100).map((p) => `${p.path}: ${p.message}`);
const tool = (id: string, after: string[] = [], args: Record<string, unknown> = {}, slug = 'core.echo') => ({
  id,
  kind: 'tool' as const,
  tool: slug,
  args,
  after,
});

describe('workflow rules', () => {
  test('fan-out and fan-in with references to waited-for steps and declared inputs', () => {
    expect(
      workflowProblems(
        [
          tool('start', [], { q: '{{inputs.topic}}' }),
          tool('left', ['start'], { v: '{{steps.start.output.q}}' }),
          tool('right', ['start']),
          tool('join', ['left', 'right'], { a: '{{steps.left.output}}', b: ['{{steps.start.output}}'] }),
        ],
        { inputs: { topic: {} }, output: '{{steps.join.output}} / {{steps.right.output}}' },
      ),
    ).toEqual([]);
  });

  test('step ids are unique and after names existing steps', () => {
    expect(workflowProblems([tool('a'), tool('a'), tool('b', ['ghost'])])).toEqual([
      "body.steps[1].id: 'a' is already the id of steps[0]; step ids must be unique",
      "body.steps[2].after[0]: 'ghost' is not a step of this workflow",
    ]);
  });

  test('a cycle is named along its steps', () => {
    expect(workflowProblems([tool('a', ['c']), tool('b', ['a']), tool('c', ['b'])])).toEqual([
      'body.steps: the after lists form a cycle: a → b → c → a (each step waits for the one before it)',
    ]);
    expect(workflowProblems([tool('self', ['self'])])).toEqual([
      'body.steps: the after lists form a cycle: self → self (each step waits for the one before it)',
    ]);
  });

  test('references: undeclared inputs, steps not waited for, unknown steps, malformed references', () => {
    expect(
      workflowProblems([
        tool('a', [], { x: '{{inputs.missing}}', y: '{{steps.b.output}}' }),
        tool('b', [], { z: 'text {{steps.nope.output}} and {{steps.a}}', keep: '{{name}} is core.template text' }),
      ]),
    ).toEqual([
      "body.steps[0].args.x: {{inputs.missing}} names no declared input; declare 'missing' in inputs",
      "body.steps[0].args.y: {{steps.b.output}}: this step does not wait for step 'b'; add it to after (directly or through another step)",
      'body.steps[1].args.z: {{steps.nope.output}} names no step of this workflow',
      'body.steps[1].args.z: {{steps.a}} is not a reference; use {{inputs.<name>}}, {{steps.<id>.output}} or {{steps.<id>.output.<path>}}',
    ]);
  });

  test('tools and agents must exist; agent-step prompts and the output are checked too', () => {
    expect(
      workflowProblems(
        [
          tool('a', [], {}, 'kv.nope'),
          { id: 'b', kind: 'agent', agent: 'ghost', prompt: 'Use {{inputs.x}}' },
          { id: 'c', kind: 'agent', agent: 'helper', prompt: 'ok' },
        ],
        { output: '{{steps.zzz.output}}' },
      ),
    ).toEqual([
      "body.steps[0].tool: 'kv.nope' is not a tool of the catalog (GET /api/build/catalog/apps/{app} lists an app's tools)",
      "body.steps[1].prompt: {{inputs.x}} names no declared input; declare 'x' in inputs",
      "body.steps[1].agent: 'ghost' is not an agent this workflow's space can use (the workspace's agents, and its own team's); GET /api/build/agents lists them",
      'body.output: {{steps.zzz.output}} names no step of this workflow',
    ]);
  });

  test('schedule, step count limit', () => {
    expect(workflowProblems([tool('a')], { schedule: { cron: '* * * *  *  *', timezone: 'Nowhere/City' } })).toEqual([
      "body.schedule.cron: '* * * *  *  *' must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily",
      "body.schedule.timezone: 'Nowhere/City' is not an IANA timezone (such as Europe/Berlin or UTC)",
    ]);
    expect(workflowProblems([tool('a'), tool('b')], {}, { ...refs, limits: { ...refs.limits, workflow_steps: 1 } })).toEqual([
      'body.steps: has 2 steps; the workspace limit is 1',
    ]);
  });
});

describe('building blocks', () => {
  test('cron: five fields, names and macros', () => {
    for (const ok of ['*/5 * * * *', '0 7 * * MON-FRI', '@daily', '@hourly', '0 0 1 JAN *']) expect(cronProblem(ok)).toBeNull();
    expect(cronProblem('0 0 0 * * *')).toMatch(/5 fields/);
    expect(cronProblem('@sometimes')).toMatch(/not a valid cron expression/);
  });

  test('timezones', () => {
    for (const ok of ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires']) expect(isTimezone(ok)).toBe(true);
    for (const bad of ['Europe/Atlantis', '+02:00', '']) expect(isTimezone(bad)).toBe(false);
  });

  test('references are parsed from placeholders; other placeholders are left alone', () => {
    expect(referencesIn('{{ inputs.a }} {{steps.s-1.output.x.0}} {{name}} {{steps.s}}')).toEqual([
      { kind: 'input', name: 'a', text: '{{inputs.a}}' },
      { kind: 'step', stepId: 's-1', path: ['x', '0'], text: '{{steps.s-1.output.x.0}}' },
      { kind: 'malformed', text: '{{steps.s}}' },
    ]);
    expect(stringsIn({ a: ['x', { 'b c': 'y' }], n: 1 }, 'args')).toEqual([
      { path: 'args.a[0]', text: 'x' },
      { path: 'args.a[1]["b c"]', text: 'y' },
    ]);
  });

  test('dag: ancestors are transitive', () => {
    const nodes = [
      { id: 'a', after: [] },
      { id: 'b', after: ['a'] },
      { id: 'c', after: ['b'] },
    ];
    expect([...ancestorsOf(nodes).get('c')!].sort()).toEqual(['a', 'b']);
    expect(findCycle(nodes)).toBeNull();
  });
});
