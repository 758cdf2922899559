// The tools an agent has: those of the apps it lists (minus its disabled tools), and its own, which
// the registry builds per agent: one tool `workflows.<slug>` per workflow it lists in `workflows`.
// A workflow tool's arguments are the workflow's inputs and its description the workflow's; the
// approval policy treats it by what the workflow's steps can do (a step of a tool that writes, or of
// an agent that can, makes it a write tool; destructive likewise). A listed workflow that is
// disabled, gone or out of the agent's space is not offered, and a call to it is refused saying why.
import type { AppDefinition, ToolDefinition } from '../domain/catalog';
import { MAX_TOOL_DEPTH } from '../domain/run-lineage';
import { mayDependOn } from '../domain/spaces';
import type { Agent, Skill, Workflow } from '../domain/types';
import type { SkillMarketplace } from './skills/marketplace';
import { skillsInstructions, skillsOf, skillTools } from './skills/skill-tools';
import { invokeTool, type ToolOutcome } from './invoke';
import { ToolError, tool, type AppTool, type ToolContext } from './types';

/** What the agent's tools are judged by: the workspace's apps and their tools (the registry's WorkspaceApps). */
interface WorkspaceApps {
  readonly apps: ReadonlyMap<string, AppDefinition>;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
}

/** The app name a workflow tool's slug begins with. */
export const WORKFLOWS_APP = 'workflows';
/** The app name the skill loaders' slugs begin with (skills/skill-tools.ts). */
export const SKILLS_APP = 'skills';

type Flags = 'read' | 'write' | 'destructive';
const RANK: Record<Flags, number> = { read: 0, write: 1, destructive: 2 };
const worse = (a: Flags, b: Flags): Flags => (RANK[b] > RANK[a] ? b : a);
const flagsOf = (t: ToolDefinition): Flags => (t.destructive ? 'destructive' : t.read_only ? 'read' : 'write');

/** The workspace's documents by slug, as the agent's tools need them. */
export interface DocumentLookup {
  workflow(slug: string): Promise<Workflow | null>;
  agent(slug: string): Promise<Agent | null>;
  /** A workspace skill by name, with its version. */
  skill(name: string): Promise<{ version: number; document: Skill } | null>;
}

/**
 * The channel apps, and whether an agent's channel is enabled: their tools are the agent's while it
 * is, whether or not it lists the app, and never while it is not.
 */
const CHANNEL_APPS: ReadonlyMap<string, (agent: Agent) => boolean> = new Map([
  ['email', (agent: Agent) => agent.email.enabled === true],
  ['whatsapp', (agent: Agent) => agent.whatsapp.enabled === true],
]);

/** The tools an agent has of its apps (of the workspace's: `apps`) and of its enabled channels, minus its disabled tools. */
export function appToolsOf(agent: Agent, apps: WorkspaceApps): Map<string, ToolDefinition> {
  const disabled = new Set(agent.tools.disabled_tools);
  const allowed = new Map<string, ToolDefinition>();
  const listed = agent.tools.apps.filter((app) => !CHANNEL_APPS.has(app));
  const channels = [...CHANNEL_APPS].filter(([, enabled]) => enabled(agent)).map(([app]) => app);
  for (const app of [...listed, ...channels]) {
    for (const t of apps.apps.get(app)?.tools ?? []) if (!disabled.has(t.slug)) allowed.set(t.slug, t);
  }
  return allowed;
}

/** An agent's own tools: its workflows, and its skills' loaders; and what its system prompt says of its skills. */
export interface AgentTools {
  /** The section the agent's instructions get (its skills, by name and description), or null. */
  readonly instructions: string | null;
  /** The tools offered, by slug. */
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /** Tools of the agent's that cannot be called now, each with why. */
  readonly refused: ReadonlyMap<string, string>;
  /** Calls one of `tools`. */
  invoke(slug: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export const NO_AGENT_TOOLS: AgentTools = {
  instructions: null,
  tools: new Map(),
  refused: new Map(),
  invoke: async (slug) => ({ ok: false, error: `'${slug}' is not a tool of this agent` }),
};

/** What a workflow's steps can do at worst; `seen` are the workflows being judged above (a cycle adds nothing). */
async function workflowFlags(workflow: Workflow, apps: WorkspaceApps, lookup: DocumentLookup, depth: number, seen: Set<string>): Promise<Flags> {
  let flags: Flags = 'read';
  seen.add(workflow.slug);
  for (const step of workflow.steps) {
    if (flags === 'destructive') break;
    if (step.kind === 'tool') {
      const definition = apps.tools.get(step.tool);
      flags = worse(flags, definition ? flagsOf(definition) : 'write');
      continue;
    }
    const agent = await lookup.agent(step.agent);
    flags = worse(flags, agent ? await agentFlags(agent, apps, lookup, depth, seen) : 'write');
  }
  return flags;
}

/** What an agent's tools can do at worst: its apps' tools, and the workflows it may call (down to the depth limit). */
async function agentFlags(agent: Agent, apps: WorkspaceApps, lookup: DocumentLookup, depth: number, seen: Set<string>): Promise<Flags> {
  let flags: Flags = 'read';
  for (const definition of appToolsOf(agent, apps).values()) flags = worse(flags, flagsOf(definition));
  if (depth >= MAX_TOOL_DEPTH) return flags; // deeper calls are refused when made
  for (const slug of agent.workflows) {
    if (flags === 'destructive' || seen.has(slug)) continue;
    const workflow = await lookup.workflow(slug);
    if (workflow) flags = worse(flags, await workflowFlags(workflow, apps, lookup, depth + 1, seen));
  }
  return flags;
}

/** The schema of a workflow tool's arguments: the workflow's inputs, those without a default required. */
function argumentsSchema(workflow: Workflow): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, input] of Object.entries(workflow.inputs)) {
    properties[name] = {
      ...(input.description !== undefined && { description: input.description }),
      ...(Object.hasOwn(input, 'default') && { default: input.default }),
    };
    if (!Object.hasOwn(input, 'default')) required.push(name);
  }
  return { type: 'object', additionalProperties: false, required, properties };
}

/** The tool that runs `workflow` (through the calling run's ToolContext.runWorkflow). */
function workflowTool(workflow: Workflow, flags: Flags): AppTool {
  const slug = `${WORKFLOWS_APP}.${workflow.slug}`;
  const description = workflow.description || `Runs workflow '${workflow.name}' and answers with its output.`;
  const made = tool(slug, workflow.name, description, flags, argumentsSchema(workflow), async (args, ctx) => {
    if (!ctx.runWorkflow) throw new ToolError(`${slug}: workflows cannot be called as tools here`);
    const outcome = await ctx.runWorkflow({
      slug: workflow.slug,
      args,
      callId: ctx.callId ?? '',
      started: (runId) => ctx.startedRun?.(runId),
      shouldStop: () => ctx.shouldStop?.() ?? false,
    });
    if (!outcome.ok) throw new ToolError(outcome.error);
    return outcome.output;
  });
  return { ...made, ownsTime: true };
}

/** The agent's own tools, as its workspace's documents (and the marketplace) stand now. */
export async function agentToolsOf(agent: Agent, apps: WorkspaceApps, lookup: DocumentLookup, marketplace: SkillMarketplace): Promise<AgentTools> {
  if (!agent.workflows.length && !agent.skills.length && !agent.workspace_skills.length) return NO_AGENT_TOOLS;
  const skills = await skillsOf(agent, lookup.skill, marketplace);
  const runnable = new Map<string, AppTool>(skills.length ? skillTools(skills).map((t) => [t.definition.slug, t] as const) : []);
  const refused = new Map<string, string>();
  for (const slug of agent.workflows) {
    const name = `${WORKFLOWS_APP}.${slug}`;
    const workflow = await lookup.workflow(slug);
    if (!workflow || !mayDependOn(agent.space.team, workflow.space.team)) {
      refused.set(name, `workflow '${slug}' no longer exists where this agent can reach it (deleted, or moved to another team's space)`);
    } else if (!workflow.enabled) {
      refused.set(name, `workflow '${slug}' is disabled; it can be called once its enabled is set to true`);
    } else {
      runnable.set(name, workflowTool(workflow, await workflowFlags(workflow, apps, lookup, 1, new Set())));
    }
  }
  return {
    instructions: skillsInstructions(skills),
    tools: new Map([...runnable].map(([slug, t]) => [slug, t.definition] as const)),
    refused,
    invoke: (slug, args, ctx) => invokeTool(slug, runnable.get(slug) ?? null, args, ctx),
  };
}
