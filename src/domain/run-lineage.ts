// Where a run stands in a chain of workflow tool calls: an agent (of an agent run, or of a workflow
// run's agent step) calls `workflows.<slug>`, which starts a child workflow run, whose agent steps
// may call workflows in turn. A chain is bounded two ways, decided here: by its depth (the workflow
// tool calls from the chain's first run), and by never running a workflow already running above
// the call (a cycle would otherwise only stop at the depth limit, having run it again and again).

/** The most workflow tool calls a chain may nest (the first run's children are at depth 1). */
export const MAX_TOOL_DEPTH = 3;

/** What a child run keeps of its parent (in its request): the run and call that started it, and the chain above. */
export interface RunParentLink {
  run_id: string;
  kind: 'agent' | 'workflow';
  tool_call_id: string;
  depth: number;
  /** The slugs of the workflows running above the child, the chain's first first (the child's own is not among them). */
  workflows: string[];
}

/** Where a run executing stands: its depth, and the workflows running in its chain (its own included, for a workflow run). */
export interface ChainPosition {
  depth: number;
  workflows: readonly string[];
}

/** The position of a run from its kind, the slug of what it runs and its request's `parent` (absent: the chain's first run). */
export function positionOf(kind: 'agent' | 'workflow', slug: string, parent: RunParentLink | undefined): ChainPosition {
  const above = parent?.workflows ?? [];
  return { depth: parent?.depth ?? 0, workflows: kind === 'workflow' ? [...above, slug] : above };
}

/** Why a run at `position` may not call workflow `slug` (a workflow's slug never changes) as a tool, or null when it may. */
export function chainRefusal(position: ChainPosition, slug: string): string | null {
  if (position.workflows.includes(slug)) {
    return `cycle: workflow '${slug}' is already running in this chain of workflow tool calls, and a chain never runs a workflow again below itself`;
  }
  if (position.depth + 1 > MAX_TOOL_DEPTH) {
    return `depth limit: workflow tool calls nest at most ${MAX_TOOL_DEPTH} deep, and this call would start a run at depth ${position.depth + 1}`;
  }
  return null;
}
