// The dependency graph of workflow steps (`after`): cycles and transitive ancestors.

export interface DagNode {
  id: string;
  after: readonly string[];
}

/** A cycle as the ids along it, first id repeated at the end (`a → b → a`), or null. */
export function findCycle(nodes: readonly DagNode[]): string[] | null {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'visiting');
    stack.push(id);
    for (const dep of byId.get(id)?.after ?? []) {
      if (!byId.has(dep)) continue;
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(id, 'done');
    return null;
  };
  for (const node of nodes) {
    const cycle = visit(node.id);
    if (cycle) return cycle.reverse(); // read in execution order: a runs before b
  }
  return null;
}

/** For each step, every step it waits for, directly or transitively. Unknown ids are ignored. */
export function ancestorsOf(nodes: readonly DagNode[]): Map<string, Set<string>> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const memo = new Map<string, Set<string>>();
  const walk = (id: string, seen: Set<string>): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const result = new Set<string>();
    for (const dep of byId.get(id)?.after ?? []) {
      if (!byId.has(dep) || seen.has(dep)) continue;
      result.add(dep);
      for (const a of walk(dep, new Set([...seen, dep]))) result.add(a);
    }
    memo.set(id, result);
    return result;
  };
  for (const node of nodes) walk(node.id, new Set([node.id]));
  return memo;
}
