// The documents the benches write: an agent of realistic size (about 7 KiB) and a workflow of
// `steps` tool steps (scripts/bench.js, bench-version-write.js).
'use strict';

function agentDocument(i) {
  const paragraph = 'Read each incoming request, decide its category, and file it with kv.set under a key that names the category and the ticket. ';
  return {
    kind: 'service.agent/v1',
    slug: `bench-agent-${i}`,
    name: `Bench agent ${i}`,
    description: 'An agent of realistic size for benchmarks.',
    icon: 'inbox',
    space: { team: null },
    folder: 'bench/agents',
    instructions: paragraph.repeat(52).slice(0, 6500),
    model: 'builtin/scripted',
    max_steps: 8,
    reasoning_effort: 'low',
    tools: { apps: ['kv', 'core', 'time'], connections: 'all', disabled_tools: ['core.fail'], approval: 'destructive' },
    skills: ['kv-records', 'careful-writes'], // the repository's marketplace (skills/)
    workspace_skills: [],
    workflows: [],
    schedule: { enabled: true, cron: '0 7 * * 1-5', timezone: 'Europe/Berlin', prompt: 'Morning sweep.' },
    email: { enabled: false },
    whatsapp: { enabled: false },
    triggers: [
      { kind: 'webhook', name: 'Inbound' },
      { kind: 'poll', name: 'Sweep', tool: 'kv.list', args: { prefix: 'ticket:' }, cron: '*/15 * * * *', timezone: 'UTC' },
    ],
    eval_criteria: ['Every request is stored under its category.', 'Nothing is deleted.'],
  };
}

function workflowDocument(slug, steps) {
  return {
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    inputs: { topic: { default: 'billing' } },
    steps: Array.from({ length: steps }, (_, i) => ({
      id: `s${i}`,
      kind: 'tool',
      tool: i % 2 ? 'core.echo' : 'kv.set',
      args: i % 2 ? { topic: '{{inputs.topic}}', previous: i ? `{{steps.s${i - 1}.output}}` : null } : { key: `${slug}:${i}`, value: '{{inputs.topic}}' },
      after: i ? [`s${i - 1}`] : [],
    })),
    output: `{{steps.s${steps - 1}.output}}`,
  };
}

module.exports = { agentDocument, workflowDocument };
