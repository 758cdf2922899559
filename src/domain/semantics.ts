// Semantic checks (docs/documents.md): the rules a document must meet beyond its JSON schema. Shared by
// validate, create and replace, so all three report a document the same way. Pure: the caller
// gathers what the workspace has (catalog, connections, agents, limits) into References.
import { eventMatches, type AppDefinition, type ToolDefinition } from './catalog';
import { ancestorsOf, findCycle } from './dag';
import { checkCriteria } from './evals/criteria';
import { cronProblem, isTimezone } from './schedule';
import { referencesIn, stringsIn, type TemplateRef } from './templates';
import type { AgentDraft, Connection, Problem, TriggerInput, WorkflowDraft, WorkspaceLimits } from './types';

export interface References {
  models: ReadonlySet<string>;
  apps: ReadonlyMap<string, AppDefinition>;
  tools: ReadonlyMap<string, ToolDefinition>;
  /** The caller's workspace's connections, by ref. */
  connections: ReadonlyMap<string, Connection>;
  /** The apps whose calls go through a connection (an MCP app with `mcp.auth: connection`). */
  connectionApps: ReadonlySet<string>;
  /** The slugs of the caller's workspace's agents that the document names and its space may use (others are not looked up). */
  agents: ReadonlySet<string>;
  /** The same of the workflows the document names (an agent's `workflows`). */
  workflows: ReadonlySet<string>;
  /** The names of the workspace's skills the document names (an agent's `workspace_skills`; skills are the whole workspace's). */
  skills: ReadonlySet<string>;
  /** The slugs of the marketplace's skills (an agent's `skills`). */
  marketplaceSkills: Pick<ReadonlySet<string>, 'has'>;
  limits: WorkspaceLimits;
}

const CATALOG_HINT = 'GET /api/build/catalog lists them';

/** The problem of a document whose stored JSON is `bytes` long (UTF-8), or null within the limit. */
export function sizeProblem(bytes: number, limit: number): Problem | null {
  return bytes > limit ? { path: 'body', message: `the document as stored is ${bytes} bytes; the workspace limit is ${limit}` } : null;
}

function checkSize(bytes: number, limits: WorkspaceLimits, problems: Problem[]): void {
  const problem = sizeProblem(bytes, limits.document_bytes);
  if (problem) problems.push(problem);
}

function checkSchedule(path: string, cron: string | undefined, timezone: string | undefined, problems: Problem[]): void {
  if (cron !== undefined) {
    const problem = cronProblem(cron);
    if (problem) problems.push({ path: `${path}.cron`, message: `'${cron}' ${problem}` });
  }
  if (timezone !== undefined && !isTimezone(timezone)) {
    problems.push({ path: `${path}.timezone`, message: `'${timezone}' is not an IANA timezone (such as Europe/Berlin or UTC)` });
  }
}

function checkTool(path: string, slug: string, refs: References, problems: Problem[]): ToolDefinition | undefined {
  const tool = refs.tools.get(slug);
  if (!tool) problems.push({ path, message: `'${slug}' is not a tool of the catalog (GET /api/build/catalog/apps/{app} lists an app's tools)` });
  return tool;
}

function checkTrigger(trigger: TriggerInput, path: string, refs: References, problems: Problem[]): void {
  if (trigger.kind === 'poll') {
    const tool = checkTool(`${path}.tool`, trigger.tool, refs, problems);
    if (tool && !tool.read_only) {
      problems.push({ path: `${path}.tool`, message: `'${trigger.tool}' is not read-only; a poll trigger's detector must be a read-only tool` });
    }
    checkSchedule(path, trigger.cron, trigger.timezone, problems);
  } else if (trigger.kind === 'app_event') {
    const app = refs.apps.get(trigger.app);
    if (!app) problems.push({ path: `${path}.app`, message: `'${trigger.app}' is not an app of the catalog; ${CATALOG_HINT}` });
    else if (!app.events.some((e) => eventMatches(trigger.event, e.name))) {
      const declared = app.events.map((e) => e.name).join(', ') || 'none';
      problems.push({ path: `${path}.event`, message: `'${trigger.event}' is not an event of app '${trigger.app}' (its events: ${declared})` });
    }
    if (trigger.key_prefix != null && trigger.app !== 'kv') {
      problems.push({ path: `${path}.key_prefix`, message: `filters the kv app's keys; app '${trigger.app}' has none (remove it)` });
    }
    const connection = refs.connections.get(trigger.connection);
    if (!connection) {
      problems.push({
        path: `${path}.connection`,
        message: `'${trigger.connection}' is not a connection of this workspace; GET /api/build/connections lists them`,
      });
    } else if (connection.app !== trigger.app) {
      problems.push({ path: `${path}.connection`, message: `'${trigger.connection}' is a connection of app '${connection.app}', not of '${trigger.app}'` });
    }
  }
}

/**
 * A tool step's connection: one of the tool's app, and named when the app's calls go through a
 * connection and it has several (the call could not choose).
 */
function checkStepConnection(step: { tool: string; connection?: string }, path: string, refs: References, problems: Problem[]): void {
  const app = step.tool.slice(0, step.tool.indexOf('.'));
  if (step.connection !== undefined) {
    const connection = refs.connections.get(step.connection);
    if (!connection)
      problems.push({
        path: `${path}.connection`,
        message: `'${step.connection}' is not a connection of this workspace; GET /api/build/connections lists them`,
      });
    else if (connection.app !== app)
      problems.push({ path: `${path}.connection`, message: `'${step.connection}' is a connection of app '${connection.app}', not of '${app}'` });
    return;
  }
  if (!refs.connectionApps.has(app)) return;
  const own = [...refs.connections.values()].filter((c) => c.app === app).map((c) => c.ref);
  if (own.length > 1)
    problems.push({ path: `${path}.connection`, message: `required: app '${app}' has several connections (${own.join(', ')}); name the one this step uses` });
}

/** `storedBytes`: the size of the document as it will be stored (storedAgentShape), ids and stamp included. */
export function checkAgent(doc: AgentDraft, refs: References, storedBytes: number): Problem[] {
  const problems: Problem[] = [];
  checkSize(storedBytes, refs.limits, problems);
  if (!refs.models.has(doc.model)) problems.push({ path: 'body.model', message: `'${doc.model}' is not a model of the catalog; ${CATALOG_HINT}` });
  if (doc.max_steps > refs.limits.agent_steps) {
    problems.push({ path: 'body.max_steps', message: `must be <= ${refs.limits.agent_steps} (the workspace's agent_steps limit)` });
  }
  doc.tools.apps.forEach((app, i) => {
    if (!refs.apps.has(app)) problems.push({ path: `body.tools.apps[${i}]`, message: `'${app}' is not an app of the catalog; ${CATALOG_HINT}` });
  });
  for (const [i, slug] of doc.tools.disabled_tools.entries()) checkTool(`body.tools.disabled_tools[${i}]`, slug, refs, problems);
  doc.workflows.forEach((slug, i) => {
    if (!refs.workflows.has(slug)) {
      problems.push({
        path: `body.workflows[${i}]`,
        message: `'${slug}' is not a workflow this agent's space can use (the workspace's workflows, and its own team's); GET /api/build/workflows lists them`,
      });
    }
  });
  doc.skills.forEach((slug, i) => {
    if (!refs.marketplaceSkills.has(slug)) {
      problems.push({ path: `body.skills[${i}]`, message: `'${slug}' is not a skill of the marketplace; GET /api/build/catalog lists them (skills)` });
    }
  });
  doc.workspace_skills.forEach((name, i) => {
    if (!refs.skills.has(name)) {
      problems.push({ path: `body.workspace_skills[${i}]`, message: `'${name}' is not a skill of this workspace; GET /api/build/skills lists them` });
    }
  });
  if (Array.isArray(doc.tools.connections)) {
    doc.tools.connections.forEach((ref, i) => {
      if (!refs.connections.has(ref)) {
        problems.push({
          path: `body.tools.connections[${i}]`,
          message: `'${ref}' is not a connection of this workspace; GET /api/build/connections lists them`,
        });
      } else {
        const app = refs.connections.get(ref)!.app;
        if (!doc.tools.apps.includes(app)) {
          problems.push({
            path: `body.tools.connections[${i}]`,
            message: `'${ref}' is a connection of app '${app}', which this agent does not use (tools.apps)`,
          });
        }
      }
    });
  }
  checkWhatsApp(doc.whatsapp, refs, problems);
  if (doc.schedule.enabled && doc.schedule.cron === undefined) {
    problems.push({ path: 'body.schedule.cron', message: 'required when schedule.enabled is true' });
  }
  checkSchedule('body.schedule', doc.schedule.cron, doc.schedule.timezone, problems);
  if (doc.triggers.length > refs.limits.triggers_per_agent) {
    problems.push({ path: 'body.triggers', message: `has ${doc.triggers.length} triggers; the workspace limit is ${refs.limits.triggers_per_agent}` });
  }
  for (const [i, trigger] of doc.triggers.entries()) checkTrigger(trigger, `body.triggers[${i}]`, refs, problems);
  checkCriteria(doc.eval_criteria, 'body.eval_criteria', (slug) => refs.tools.has(slug), problems);
  return problems;
}

/**
 * The WhatsApp channel answers the number of a connection of the `whatsapp` app. Enabled with none
 * named, it answers no number yet (docs/channels.md): a document of before the channel was real stays valid.
 */
function checkWhatsApp(whatsapp: AgentDraft['whatsapp'], refs: References, problems: Problem[]): void {
  const path = 'body.whatsapp.connection';
  if (whatsapp.connection === undefined) return;
  const connection = refs.connections.get(whatsapp.connection);
  if (!connection) problems.push({ path, message: `'${whatsapp.connection}' is not a connection of this workspace; GET /api/build/connections lists them` });
  else if (connection.app !== 'whatsapp')
    problems.push({ path, message: `'${whatsapp.connection}' is a connection of app '${connection.app}', not of 'whatsapp'` });
}

function checkReference(
  ref: TemplateRef,
  path: string,
  doc: WorkflowDraft,
  reachable: ReadonlySet<string> | 'all',
  stepIds: ReadonlySet<string>,
  problems: Problem[],
): void {
  switch (ref.kind) {
    case 'malformed':
      problems.push({ path, message: `${ref.text} is not a reference; use {{inputs.<name>}}, {{steps.<id>.output}} or {{steps.<id>.output.<path>}}` });
      return;
    case 'input':
      if (!Object.hasOwn(doc.inputs ?? {}, ref.name)) problems.push({ path, message: `${ref.text} names no declared input; declare '${ref.name}' in inputs` });
      return;
    case 'step':
      if (!stepIds.has(ref.stepId)) problems.push({ path, message: `${ref.text} names no step of this workflow` });
      else if (reachable !== 'all' && !reachable.has(ref.stepId)) {
        problems.push({ path, message: `${ref.text}: this step does not wait for step '${ref.stepId}'; add it to after (directly or through another step)` });
      }
  }
}

/** `storedBytes`: the size of the document as it will be stored (with its stamp). */
export function checkWorkflow(doc: WorkflowDraft, refs: References, storedBytes: number): Problem[] {
  const problems: Problem[] = [];
  checkSize(storedBytes, refs.limits, problems);
  if (doc.steps.length > refs.limits.workflow_steps) {
    problems.push({ path: 'body.steps', message: `has ${doc.steps.length} steps; the workspace limit is ${refs.limits.workflow_steps}` });
  }
  const firstIndex = new Map<string, number>();
  doc.steps.forEach((step, i) => {
    const first = firstIndex.get(step.id);
    if (first !== undefined)
      problems.push({ path: `body.steps[${i}].id`, message: `'${step.id}' is already the id of steps[${first}]; step ids must be unique` });
    else firstIndex.set(step.id, i);
  });
  const stepIds = new Set(firstIndex.keys());
  const nodes = doc.steps.map((s) => ({ id: s.id, after: s.after ?? [] }));
  doc.steps.forEach((step, i) => {
    (step.after ?? []).forEach((dep, j) => {
      if (!stepIds.has(dep)) problems.push({ path: `body.steps[${i}].after[${j}]`, message: `'${dep}' is not a step of this workflow` });
    });
  });
  const cycle = findCycle(nodes);
  if (cycle) problems.push({ path: 'body.steps', message: `the after lists form a cycle: ${cycle.join(' → ')} (each step waits for the one before it)` });

  const ancestors = ancestorsOf(nodes);
  doc.steps.forEach((step, i) => {
    const path = `body.steps[${i}]`;
    const reachable = ancestors.get(step.id) ?? new Set<string>();
    const texts = step.kind === 'tool' ? stringsIn(step.args ?? {}, `${path}.args`) : [{ path: `${path}.prompt`, text: step.prompt }];
    for (const { path: at, text } of texts) for (const ref of referencesIn(text)) checkReference(ref, at, doc, reachable, stepIds, problems);
    if (step.kind === 'tool') {
      checkTool(`${path}.tool`, step.tool, refs, problems);
      checkStepConnection(step, path, refs, problems);
    } else if (!refs.agents.has(step.agent)) {
      problems.push({
        path: `${path}.agent`,
        message: `'${step.agent}' is not an agent this workflow's space can use (the workspace's agents, and its own team's); GET /api/build/agents lists them`,
      });
    }
  });
  // The output is rendered when the run ends, so it may use any step.
  for (const ref of referencesIn(doc.output ?? '')) checkReference(ref, 'body.output', doc, 'all', stepIds, problems);
  if (doc.schedule) checkSchedule('body.schedule', doc.schedule.cron, doc.schedule.timezone, problems);
  return problems;
}
