// Valid request documents, built from the named examples in openapi.yaml so that tests, docs and
// the contract test start from the same bytes.
import fs from 'node:fs';
import yaml from 'js-yaml';
import type { components } from '../../generated/api';
import { specPath } from '../../src/paths';

type Schemas = components['schemas'];
const spec = yaml.load(fs.readFileSync(specPath, 'utf8')) as { components: { examples: Record<string, { value: unknown }> } };

export function example<T>(name: string): T {
  const found = spec.components.examples[name];
  if (!found) throw new Error(`no example ${name} in openapi.yaml`);
  return structuredClone(found.value) as T;
}

export const agentCreate = (overrides: Partial<Schemas['AgentCreate']> = {}): Schemas['AgentCreate'] => ({
  ...example<Schemas['AgentCreate']>('AgentCreateRequestExample'),
  ...overrides,
});

export const workflowCreate = (overrides: Partial<Schemas['WorkflowCreate']> = {}): Schemas['WorkflowCreate'] => ({
  ...example<Schemas['WorkflowCreate']>('WorkflowCreateRequestExample'),
  ...overrides,
});

/** A minimal agent: every required member, nothing optional. */
export const minimalAgent = (name = 'Minimal agent'): Schemas['AgentCreate'] => ({
  kind: 'service.agent/v1',
  name,
  description: null,
  icon: null,
  space: { team: null },
  folder: null,
  instructions: '',
  model: 'builtin/scripted',
  max_steps: 1,
  tools: { apps: [], connections: 'all', disabled_tools: [], approval: 'write' },
  skills: [],
  workspace_skills: [],
  workflows: [],
  schedule: {},
  email: {},
  whatsapp: {},
  triggers: [],
  eval_criteria: [],
});

/** The read document turned into a replace body, as a client that read it would send it. */
export function replaceBody(doc: Schemas['Agent']): Schemas['AgentReplace'] {
  return structuredClone(doc) as Schemas['AgentReplace'];
}

/** A read agent without its triggers' live status members (what the stored document holds). */
export function storedPart(doc: Schemas['Agent']): Schemas['Agent'] {
  return {
    ...doc,
    triggers: doc.triggers.map(({ last_fired_at: _f, next_fire_at: _n, last_error: _e, ...trigger }) => trigger as Schemas['Agent']['triggers'][number]),
  };
}
