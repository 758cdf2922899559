// Gathers what a document may reference in the caller's workspace, for the semantic checks.
import type { References } from '../domain/semantics';
import { describeProblems, type Problem } from '../domain/types';
import { badRequest } from '../errors';
import type { Principal, ServiceContext } from './context';
import { mayDependOn, writeRefusal, type Team } from '../domain/spaces';

/** The problem of a write that puts a document in a space its author does not belong to. */
export function spaceProblems(who: Principal, team: Team): Problem[] {
  const refusal = writeRefusal(who, team);
  return refusal ? [{ path: 'body.space.team', message: refusal }] : [];
}

// The catalog's model ids, built once per model list (it is fixed for the life of the service).
const modelIdSets = new WeakMap<ServiceContext['models'], ReadonlySet<string>>();
function modelIds(models: ServiceContext['models']): ReadonlySet<string> {
  let ids = modelIdSets.get(models);
  if (!ids) modelIdSets.set(models, (ids = new Set(models.map((m) => m.id))));
  return ids;
}

/**
 * `named`: the agents (workflow agent steps), workflows (an agent's `workflows`) and skills (its
 * `workspace_skills`) the document names; only those are looked up, and only those a document in `team`'s space may depend on count
 * (domain/spaces.ts, mayDependOn).
 */
export async function referencesFor(
  ctx: ServiceContext,
  who: Principal,
  team: Team,
  named: { agents?: string[]; workflows?: string[]; skills?: string[] } = {},
): Promise<References> {
  const connections = await ctx.store.connections.list(who.workspaceId);
  const workspaceApps = await ctx.apps.of(who.workspaceId);
  const { apps, tools } = workspaceApps;
  const agents = new Set<string>();
  for (const slug of new Set(named.agents)) {
    const agent = await ctx.store.agents.find(who.workspaceId, slug);
    if (agent && mayDependOn(team, agent.document.space.team)) agents.add(slug);
  }
  const workflows = new Set<string>();
  for (const slug of new Set(named.workflows)) {
    const workflow = await ctx.store.workflows.find(who.workspaceId, slug);
    if (workflow && mayDependOn(team, workflow.document.space?.team ?? null)) workflows.add(slug);
  }
  // Skills are the whole workspace's (domain/spaces.ts): any space may list any of them, by name.
  const skills = new Set<string>();
  for (const name of new Set(named.skills)) if ((await ctx.store.skills.find(who.workspaceId, name))?.slug === name) skills.add(name);
  return {
    models: modelIds(ctx.models),
    apps,
    tools,
    connections: new Map(connections.map((c) => [c.ref, c])),
    connectionApps: new Set([...apps.keys()].filter((app) => workspaceApps.needsConnection(app))),
    agents,
    workflows,
    skills,
    marketplaceSkills: ctx.apps.marketplace.skills,
    limits: ctx.limits,
  };
}

/** The size of a document's JSON in UTF-8: what the workspace's document_bytes limits (of the stored shape). */
export function jsonBytes(doc: unknown): number {
  return Buffer.byteLength(JSON.stringify(doc));
}

/** One 400 that lists every problem found, each with its JSON path. */
export function rejectProblems(problems: Problem[]): void {
  if (problems.length) throw badRequest(describeProblems(problems));
}
