// What still uses an app or a connection: the agents and workflows that would break if it went.
// Read from every document of the workspace (a delete is rare; the documents are bounded by the
// workspace's limits). Documents the caller cannot see are counted, not named (domain/spaces.ts).
import { sees } from '../domain/spaces';
import type { Agent, Workflow } from '../domain/types';
import type { Principal, ServiceContext } from './context';

export interface Usage {
  /** The slugs of the documents the caller sees that use it. */
  agents: string[];
  workflows: string[];
  /** How many that use it the caller does not see. */
  hidden: number;
}

/** What uses app `app` (its tools, its connections) or connection `connection`. */
export async function usageOf(ctx: Pick<ServiceContext, 'store'>, who: Principal, of: { app: string } | { connection: string }): Promise<Usage> {
  const usage: Usage = { agents: [], workflows: [], hidden: 0 };
  const ws = who.workspaceId;
  for (const { slug } of JSON.parse((await ctx.store.agents.list(ws)).json) as { slug: string }[]) {
    const agent = (await ctx.store.agents.find(ws, slug))?.document;
    if (agent && agentUses(agent, of)) count(usage, 'agents', slug, sees(who, agent.space.team));
  }
  for (const { slug } of JSON.parse((await ctx.store.workflows.list(ws)).json) as { slug: string }[]) {
    const workflow = (await ctx.store.workflows.find(ws, slug))?.document;
    if (workflow && workflowUses(workflow, of)) count(usage, 'workflows', slug, sees(who, workflow.space?.team ?? null));
  }
  return usage;
}

function count(usage: Usage, kind: 'agents' | 'workflows', slug: string, visible: boolean) {
  if (visible) usage[kind].push(slug);
  else usage.hidden++;
}

const ofApp = (tool: string, app: string) => tool.startsWith(`${app}.`);

function agentUses(agent: Agent, of: { app: string } | { connection: string }): boolean {
  if ('app' in of) {
    return (
      agent.tools.apps.includes(of.app) ||
      agent.triggers.some((t) => (t.kind === 'poll' && ofApp(t.tool, of.app)) || (t.kind === 'app_event' && t.app === of.app))
    );
  }
  const named = agent.tools.connections;
  return (Array.isArray(named) && named.includes(of.connection)) || agent.triggers.some((t) => t.kind === 'app_event' && t.connection === of.connection);
}

function workflowUses(workflow: Workflow, of: { app: string } | { connection: string }): boolean {
  return workflow.steps.some((step) => step.kind === 'tool' && ('app' in of ? ofApp(step.tool, of.app) : step.connection === of.connection));
}

/** `what is in use: agents a, b; workflows c; and 2 documents you cannot see`, or null when unused. */
export function usageText(usage: Usage): string | null {
  const parts = [
    usage.agents.length ? `agents ${usage.agents.join(', ')}` : '',
    usage.workflows.length ? `workflows ${usage.workflows.join(', ')}` : '',
    usage.hidden ? `${usage.hidden} document${usage.hidden === 1 ? '' : 's'} in spaces you do not see` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : null;
}
