// The schedules a document declares, as the scheduler keeps them: an agent's own schedule, each of
// its poll triggers, a workflow's schedule. Pure: the store keeps a row per schedule in step with
// the document, in the same transaction as the document's write.
import type { Agent, Workflow } from './types';

export type ScheduleKind = 'agent' | 'workflow' | 'poll';

export interface DeclaredSchedule {
  /** Stable across writes: `agent:<agent id>`, `workflow:<workflow id>`, `poll:<trigger id>`. */
  id: string;
  kind: ScheduleKind;
  triggerId: string | null;
  cron: string;
  timezone: string;
  /** Whether it fires: an active agent's enabled schedule or trigger, an enabled workflow's schedule. */
  active: boolean;
  /** What a poll runs (its detector tool and arguments, as JSON): a change restarts change detection. */
  detector: string | null;
}

export function agentSchedules(agent: Agent): DeclaredSchedule[] {
  const live = agent.status === 'active';
  const schedules: DeclaredSchedule[] = [];
  const own = agent.schedule;
  if (own.cron !== undefined) {
    schedules.push({
      id: `agent:${agent.id}`,
      kind: 'agent',
      triggerId: null,
      cron: own.cron,
      timezone: own.timezone ?? 'UTC',
      active: live && own.enabled === true,
      detector: null,
    });
  }
  for (const t of agent.triggers) {
    if (t.kind !== 'poll') continue;
    schedules.push({
      id: `poll:${t.id}`,
      kind: 'poll',
      triggerId: t.id,
      cron: t.cron,
      timezone: t.timezone,
      active: live && t.enabled,
      detector: JSON.stringify({ tool: t.tool, args: t.args }),
    });
  }
  return schedules;
}

export function workflowSchedules(workflowId: string, workflow: Workflow): DeclaredSchedule[] {
  const own = workflow.schedule;
  if (!own) return [];
  return [
    { id: `workflow:${workflowId}`, kind: 'workflow', triggerId: null, cron: own.cron, timezone: own.timezone, active: workflow.enabled, detector: null },
  ];
}
