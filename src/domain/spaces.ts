// Spaces: who sees what within a workspace. This is the one place the rule is decided.
//
// A document lives in the workspace's space (`space.team: null`) or in a team's (`space.team:
// "finance"`). Every member with Build authorization sees the workspace's space. Only a team's
// members see a team's space, and a workspace administrator sees every space. A spaced resource
// follows this rule for every operation, reads and writes alike, and what a caller cannot see does
// not exist for them: 404, as an unknown id is. Spaced: agents and workflows, and runs (in the space
// of the document they run, kept on the run when it is accepted). The whole workspace's: the
// catalog, connections, and skills (an agent of any space may list any skill of the workspace in its
// `workspace_skills`; a skill's name is unique in the workspace and every member sees it). A
// resource added later is one or the other, and if spaced, asks these functions.
import type { Principal } from './principal';

/** The space of a document: a team's slug, or null for the workspace's own space. */
export type Team = string | null;

/** The slug no team may take: list filters name the workspace's own space by it (`space=workspace`). */
export const RESERVED_TEAM = 'workspace';

/** Whether `who` sees what is in `team`'s space (null: the workspace's). */
export function sees(who: Principal, team: Team): boolean {
  return team === null || who.admin || who.teams.includes(team);
}

/**
 * Why `who` may not put a document in `team`'s space, or null when they may. A caller writes only
 * in a space they belong to, and learns nothing of a team's documents from the refusal.
 */
export function writeRefusal(who: Principal, team: Team): string | null {
  if (team === RESERVED_TEAM) return `'${RESERVED_TEAM}' names the workspace's own space in filters and cannot be a team; use null for that space`;
  if (sees(who, team)) return null;
  const yours = who.teams.length ? `yours: ${who.teams.join(', ')}` : 'your token names no team';
  return `you are not a member of team '${team}', and a document may only be put in a space you belong to (${yours}; null is the workspace's space)`;
}

/**
 * Whether a document in space `from` may depend on one in space `to` (an agent step naming an
 * agent): the workspace's documents are everyone's, so anything may depend on them; a team's only
 * on its own space's.
 */
export function mayDependOn(from: Team, to: Team): boolean {
  return to === null || to === from;
}

/**
 * Whether `folder` (a document's folder path, `payroll/monthly`) is `prefix` or below it, segment
 * by segment: `payroll` holds `payroll/monthly`, not `payroll2`.
 */
export function inFolder(folder: string | null, prefix: string): boolean {
  if (folder === null) return false;
  return folder === prefix || (folder.startsWith(prefix) && folder.charCodeAt(prefix.length) === 0x2f);
}

/**
 * The spaces an event endpoint receives the events of, as its writer `who` sees them when writing:
 * every space for an administrator, else the workspace's own and the writer's teams. An endpoint
 * carries it from its last write, so its owner learns nothing of spaces they could not read.
 */
export function eventGrant(who: Principal): { allSpaces: boolean; teams: string[] } {
  return who.admin ? { allSpaces: true, teams: [] } : { allSpaces: false, teams: [...who.teams] };
}
