// A replayed write (an Idempotency-Key seen before) answers only while its caller still sees what
// the kept reply is about (domain/spaces.ts): the document it created, tested or the run it
// cancelled. A caller who has left the space since gets the refusal the operation would give now.
import type { StoredReply } from '../store/port';
import { findAgent } from './agents';
import type { Principal, ServiceContext } from './context';
import { rejectProblems, spaceProblems } from './references';
import { findRun } from './runs';
import { findWorkflow } from './workflows';

/** The check of a replay of `operationId` with these path parameters (idempotency.ts, `stillVisible`). */
export function replayVisibility(ctx: ServiceContext, who: Principal, operationId: string, params: Record<string, string>) {
  return async (reply: StoredReply): Promise<void> => {
    switch (operationId) {
      case 'testAgent':
      case 'startEval':
        await findAgent(ctx, who, params.ref as string);
        return;
      case 'testWorkflow':
        await findWorkflow(ctx, who, params.ref as string);
        return;
      case 'cancelAgentRun':
        await findRun(ctx, who, params.runId as string, 'agent');
        return;
      case 'cancelWorkflowRun':
        await findRun(ctx, who, params.runId as string, 'workflow');
        return;
      case 'createAgent':
      case 'createWorkflow': {
        // As the create would be answered now: 400 naming body.space.team.
        const team = createdTeam(reply.body);
        if (team !== undefined) rejectProblems(spaceProblems(who, team));
      }
    }
  };
}

/** The team of the document a create's kept reply names (undefined: a refusal, which names none). */
function createdTeam(body: string): string | null | undefined {
  try {
    const parsed = JSON.parse(body) as { data?: { document?: { space?: { team?: string | null } } } };
    return parsed.data?.document?.space?.team;
  } catch {
    return undefined;
  }
}
