import { boundedMemo } from '../../src/domain/bounded-memo';
import { cronProblem, dueTimesThrough, isTimezone, nextDueAfter, planFires } from '../../src/domain/schedule';
import { assignTriggerIds, firstFreeSlug, normaliseAgent, slugFromName } from '../../src/domain/agent';
import { describeAgentChanges, describeWorkflowChanges, same } from '../../src/domain/changes';
import { checkWorkflowShape, materialiseWorkflow, normaliseWorkflow } from '../../src/domain/workflow';
import type { Agent, AgentDraft, Workflow } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';

describe('slugs', () => {
  test.each([
    ['Support triage', 'support-triage'],
    ['  Ünïcode -- Name!! ', 'unicode-name'],
    ['***', 'agent'],
    ['straße', 'strasse'],
    ['Привет мир', 'privet-mir'],
    ['你好 世界', 'ni-hao-shi-jie'],
    ['Ångström Ærø', 'angstrom-aero'],
    ['🙂', 'agent'],
    ['a'.repeat(200), 'a'.repeat(160)],
  ])('%j → %j', (name, slug) => expect(slugFromName(name)).toBe(slug));

  test('the first free slug appends -2, -3 and stays within the length limit', () => {
    const taken = new Set(['x', 'x-2']);
    expect(firstFreeSlug('x', (s) => taken.has(s))).toBe('x-3');
    expect(firstFreeSlug('y', (s) => taken.has(s))).toBe('y');
    const long = 'b'.repeat(160);
    expect(firstFreeSlug(long, (s) => s === long)).toBe(`${'b'.repeat(158)}-2`);
  });
});

describe('normaliseAgent', () => {
  test('drops read-only members and fills defaults, saying so', () => {
    const input = { ...minimalAgent(), status: 'active', triggers: [{ kind: 'webhook', name: 'W', secret_prefix: 'x' }] } as AgentDraft;
    const { document, changes } = normaliseAgent(input);
    expect(document).not.toHaveProperty('status');
    expect(document.reasoning_effort).toBeNull();
    expect(document.triggers).toEqual([{ kind: 'webhook', name: 'W', prompt: null, enabled: true, signing: 'none' }]);
    expect(changes).toHaveLength(6);
  });

  test('a complete document needs no changes', () => {
    const input = { ...minimalAgent(), reasoning_effort: 'high' } as AgentDraft;
    expect(normaliseAgent(input).changes).toEqual([]);
  });
});

describe('assignTriggerIds', () => {
  const stored = [{ id: 'a', kind: 'webhook' as const, secret_prefix: 'whk_abcd', signing: 'none' as const }];
  let n = 0;
  const newId = () => `new-${++n}`;

  test('keeps known ids with their secret prefix and mints new ones', () => {
    const { triggers, problems } = assignTriggerIds(
      [
        { kind: 'webhook', id: 'a', name: 'A', prompt: null, enabled: true },
        { kind: 'webhook', name: 'B', prompt: null, enabled: true },
      ],
      stored,
      newId,
    );
    expect(problems).toEqual([]);
    expect(triggers.map((t) => [t.id, t.kind === 'webhook' ? t.secret_prefix : undefined])).toEqual([
      ['a', 'whk_abcd'],
      ['new-1', null],
    ]);
  });

  test('reports unknown ids, kind changes and repeats with their paths', () => {
    const { problems } = assignTriggerIds(
      [
        { kind: 'webhook', id: 'zzz', name: 'Z' },
        { kind: 'poll', id: 'a', name: 'A', tool: 'kv.list', cron: '* * * * *', timezone: 'UTC' },
        { kind: 'poll', id: 'a', name: 'A', tool: 'kv.list', cron: '* * * * *', timezone: 'UTC' },
      ],
      stored,
      newId,
    );
    expect(problems.map((p) => p.path)).toEqual(['body.triggers[0].id', 'body.triggers[1].id', 'body.triggers[2].id', 'body.triggers[2].id']);
  });
});

describe('workflows', () => {
  const base = { kind: 'service.workflow/v1' as const, slug: 'w', name: 'W', steps: [{ id: 'a', kind: 'tool' as const, tool: 'core.echo' }] };

  test('input names must be lowercase letters, digits and underscores, 1..40', () => {
    expect(checkWorkflowShape({ ...base, inputs: { ok_1: {}, Bad: {}, ['x'.repeat(41)]: {} } }).map((p) => p.path)).toEqual([
      'body.inputs.Bad',
      `body.inputs.${'x'.repeat(41)}`,
    ]);
  });

  test('normalisation fills every default in schema order', () => {
    const doc = materialiseWorkflow(normaliseWorkflow(base).document, 'stamp');
    expect(Object.keys(doc)).toEqual([
      'kind',
      'slug',
      'name',
      'description',
      'enabled',
      'updated_at',
      'space',
      'send_as',
      'inputs',
      'schedule',
      'steps',
      'output',
    ]);
    expect(doc.steps[0]).toEqual({ id: 'a', kind: 'tool', tool: 'core.echo', args: {}, after: [] });
  });
});

describe('change descriptions', () => {
  const agent = (overrides: Partial<Agent> = {}): Agent =>
    ({ ...minimalAgent('A'), id: 'i', slug: 'a', status: 'draft', updated_at: 's', reasoning_effort: null, ...overrides }) as Agent;

  test('members, status and triggers', () => {
    const hook = { kind: 'webhook' as const, id: 't1', name: 'Hook', prompt: null, enabled: true, secret_prefix: null, signing: 'none' as const };
    const before = agent({ triggers: [hook] });
    const after = agent({
      name: 'B',
      status: 'active',
      triggers: [
        { ...hook, enabled: false },
        { ...hook, id: 't2', name: 'New' },
      ],
    });
    expect(describeAgentChanges(before, after)).toEqual([
      'name changed',
      'status changed from draft to active',
      "trigger 'Hook' changed",
      "trigger 'New' added",
    ]);
    expect(describeAgentChanges(after, before)).toEqual([
      'name changed',
      'status changed from active to draft',
      "trigger 'Hook' changed",
      "trigger 'New' removed",
    ]);
    expect(describeAgentChanges(before, before)).toEqual(['no changes']);
  });

  test('workflow steps, including a reorder', () => {
    const step = (id: string) => ({ id, kind: 'tool' as const, tool: 'core.echo', args: {}, after: [] });
    const wf = (steps: Workflow['steps']) => materialiseWorkflow(normaliseWorkflow({ kind: 'service.workflow/v1', slug: 'w', name: 'W', steps }).document, 's');
    expect(describeWorkflowChanges(wf([step('a'), step('b')]), wf([step('b'), step('a')]))).toEqual(['steps reordered']);
    expect(describeWorkflowChanges(wf([step('a')]), wf([step('b')]))).toEqual(["step 'b' added", "step 'a' removed"]);
  });
});

test('change reports compare JSON values by content: member order does not count, array order and types do', () => {
  expect(same({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toBe(true);
  expect(same([1, 2], [2, 1])).toBe(false);
  expect(same({ a: 1 }, { a: 1, b: 1 })).toBe(false);
  expect(same({ a: undefined }, { b: undefined })).toBe(false);
  expect(same([], {})).toBe(false);
  expect(same('1', 1)).toBe(false);
  expect(same(null, {})).toBe(false);
});

describe('schedule verdicts are remembered for a bounded number of strings', () => {
  test('20,000 distinct timezones and cron expressions leave at most 1,000 of each remembered, and verdicts stay right', () => {
    for (let i = 0; i < 20_000; i++) {
      isTimezone(`Europe/Nowhere-${i}`);
      cronProblem(`${i % 60} ${i % 24} * * ${i}`);
    }
    expect(isTimezone.size).toBeLessThanOrEqual(1000);
    expect(cronProblem.size).toBeLessThanOrEqual(1000);
    expect(isTimezone('Europe/Berlin')).toBe(true);
    expect(isTimezone('Europe/Nowhere-1')).toBe(false);
    expect(cronProblem('*/5 * * * *')).toBeNull();
  });

  test('the memo forgets the oldest argument first and calls the function once per remembered argument', () => {
    let calls = 0;
    const memo = boundedMemo((key) => {
      calls++;
      return key.length;
    }, 2);
    memo('a');
    memo('bb');
    memo('a');
    expect(calls).toBe(2);
    memo('ccc'); // evicts 'a'
    expect(memo.size).toBe(2);
    memo('bb');
    expect(calls).toBe(3);
    memo('a');
    expect(calls).toBe(4);
  });
});

describe('due times (croner) and the catch-up plan', () => {
  const at = (iso: string) => Date.parse(iso);
  const nextTimes = (cron: string, tz: string, fromIso: string, count: number) => {
    const times: string[] = [];
    for (let t = at(fromIso); times.length < count; ) {
      t = nextDueAfter(cron, tz, t)!;
      times.push(new Date(t).toISOString());
    }
    return times;
  };

  test('spring forward in Europe/Berlin: a local time the clocks skip fires once, at the first valid time after the gap', () => {
    expect(nextTimes('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: 03:00 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  test('fall back in Europe/Berlin: a local time the clocks repeat fires once (its first occurrence); intervals follow absolute time', () => {
    expect(nextTimes('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    expect(nextTimes('0 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET: the repeated hour is an hour later in absolute time
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
  });

  test('due times through now, and the plan: the latest within the window fires, the rest are missed', () => {
    const first = at('2026-11-23T10:00:00Z');
    const due = dueTimesThrough('*/10 * * * *', 'UTC', first, at('2026-11-23T10:35:00Z'), 100);
    expect(due.map((t) => new Date(t).toISOString().slice(11, 16))).toEqual(['10:00', '10:10', '10:20', '10:30']);
    expect(planFires(due, at('2026-11-23T10:35:00Z'), 10 * 60_000)).toEqual({ fire: due[3], missed: due.slice(0, 3) });
    expect(planFires(due, at('2026-11-23T10:45:00Z'), 10 * 60_000)).toEqual({ fire: null, missed: due });
    expect(planFires([], at('2026-11-23T10:45:00Z'), 10 * 60_000)).toEqual({ fire: null, missed: [] });
    expect(dueTimesThrough('* * * * *', 'UTC', first, first + 5000 * 60_000, 3)).toHaveLength(3); // the latest kept
  });
});
