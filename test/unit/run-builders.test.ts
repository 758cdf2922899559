// One builder per run kind: whoever starts a run (a test, a webhook, a schedule, a poll), the run
// executes the stored version, reserves what its kind needs, and starts from the empty state.
import { agentRun, workflowRun } from '../../src/services/run-builders';
import { initialWorkflowState } from '../../src/runtime/workflow-executor';
import type { Agent, Workflow } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';

const agentDoc = { ...minimalAgent('Helper'), id: 'a-1', slug: 'helper', status: 'active', updated_at: '' } as unknown as Agent;
const agent = { id: 'a-1', slug: 'helper', version: 4, json: JSON.stringify(agentDoc), document: agentDoc };
const workflowDoc = {
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
  output: null,
  steps: [
    { id: 'a', kind: 'tool', tool: 'core.echo', args: {}, after: [] },
    { id: 'b', kind: 'agent', agent: 'helper', prompt: 'go', after: ['a'] },
  ],
} as unknown as Workflow;
const workflow = { id: 'w-1', slug: 'w', version: 2, json: JSON.stringify(workflowDoc), document: workflowDoc };

test('an agent run: the stored version, named by slug and name, one credit reserved, an empty transcript', () => {
  const run = agentRun(agent, { prompt: 'hi' }, { workspaceId: 'ws', startedBy: 'user-1', source: 'test' });
  expect(run).toEqual({
    kind: 'agent',
    workspaceId: 'ws',
    startedBy: 'user-1',
    source: 'test',
    targetId: 'a-1',
    targetVersion: 4,
    team: null,
    request: { prompt: 'hi' },
    snapshot: agent,
    agent: { slug: 'helper', name: 'Helper' },
    state: { transcript: [], tool_calls: [], final_text: null, steps: 0 },
    minimumCost: 1,
  });
});

test("an agent run keeps its starter's bookkeeping and request members, and no other", () => {
  const fire = { kind: 'poll' as const, scheduleId: 's', dueAt: 5, seenHash: 'x', newHash: 'y' };
  const run = agentRun(agent, { prompt: 'p', input: { n: 1 } }, { workspaceId: 'ws', startedBy: 'poll:t', source: 'poll', triggerId: 't', fire });
  expect(run).toMatchObject({ triggerId: 't', fire, request: { prompt: 'p', input: { n: 1 } }, source: 'poll' });
  expect(Object.keys(agentRun(agent, { prompt: 'p' }, { workspaceId: 'ws', startedBy: 'u', source: 'test' }))).not.toContain('fire');
  // Each run starts from a state of its own.
  const [one, two] = [1, 2].map(() => agentRun(agent, { prompt: 'p' }, { workspaceId: 'ws', startedBy: 'u', source: 'test' }));
  expect(one!.state).not.toBe(two!.state);
});

test('a workflow run: its resolved input, its step agents, one credit per step, every step pending', () => {
  const stepAgents = { helper: agentDoc };
  const run = workflowRun(workflow, { n: 3 }, stepAgents, { workspaceId: 'ws', startedBy: 'schedule:s', source: 'schedule' });
  expect(run).toEqual({
    kind: 'workflow',
    workspaceId: 'ws',
    startedBy: 'schedule:s',
    source: 'schedule',
    targetId: 'w-1',
    targetVersion: 2,
    team: null,
    request: { input: { n: 3 } },
    snapshot: workflow,
    stepAgents,
    state: initialWorkflowState(workflowDoc),
    minimumCost: 2,
  });
});
