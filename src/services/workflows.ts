// Workflow use cases: read, validate, create, replace and delete.
import { randomUUID } from 'node:crypto';
import { conflict, notFound } from '../errors';
import { describeWorkflowChanges } from '../domain/changes';
import { checkWorkflow } from '../domain/semantics';
import { checkWorkflowShape, materialiseWorkflow, normaliseWorkflow } from '../domain/workflow';
import { STAMP_SIZED } from '../domain/agent';
import type { Workflow, WorkflowDraft, WorkflowReplace } from '../domain/types';
import type { WorkflowRecord } from '../store/port';
import { assertStampsMatch, staleConflict } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { jsonBytes, referencesFor, rejectProblems, spaceProblems } from './references';
import { sees } from '../domain/spaces';
import { keptVersion, restoredNote } from './versions';

export interface WorkflowWrite {
  record: WorkflowRecord;
  applied: string[];
  changes: string[];
}

/** The workflow `ref` names, if `who` sees its space (domain/spaces.ts); otherwise 404, as for a workflow that does not exist. */
export async function findWorkflow(ctx: ServiceContext, who: Principal, ref: string): Promise<WorkflowRecord> {
  const record = await ctx.store.workflows.find(who.workspaceId, ref);
  if (!record || !sees(who, record.document.space.team)) throw notFound(`workflow '${ref}' not found in this workspace`);
  return record;
}

/**
 * The one path validate, create and replace share: the rules the schema cannot state, then
 * normalisation and every semantic rule; all problems are reported in one 400.
 */
async function prepare(ctx: ServiceContext, who: Principal, body: WorkflowDraft) {
  rejectProblems(checkWorkflowShape(body));
  const normalised = normaliseWorkflow(body);
  const agentSlugs = normalised.document.steps.flatMap((step) => (step.kind === 'agent' ? [step.agent] : []));
  // Measured as stored: defaults filled and the stamp added.
  const bytes = jsonBytes(materialiseWorkflow(normalised.document, STAMP_SIZED));
  const team = normalised.document.space?.team ?? null;
  rejectProblems([...spaceProblems(who, team), ...checkWorkflow(normalised.document, await referencesFor(ctx, who, team, { agents: agentSlugs }), bytes)]);
  return { ...normalised, json: JSON.stringify(normalised.document) };
}

/** The validation result, with the normalised document as JSON (`documentJson`) to send as is. */
export async function validateWorkflow(ctx: ServiceContext, who: Principal, body: WorkflowDraft) {
  const { json, changes } = await prepare(ctx, who, body);
  return { valid: true as const, changes, documentJson: json };
}

export async function createWorkflow(ctx: ServiceContext, who: Principal, body: WorkflowDraft): Promise<WorkflowWrite> {
  const doc = materialiseWorkflow((await prepare(ctx, who, body)).document, '');
  const meta = (stored: Workflow) => ({ author: who.userId, changes: describeWorkflowChanges(null, stored) });
  const outcome = await ctx.store.workflows.create(who.workspaceId, randomUUID(), doc, { limit: ctx.limits.workflows }, meta);
  if (!outcome.ok) {
    throw outcome.reason === 'slug_taken'
      ? conflict(`body.slug: '${doc.slug}' is taken in this workspace; choose another slug`)
      : conflict(`this workspace has reached its limit of ${ctx.limits.workflows} workflows`);
  }
  return { record: outcome.record, applied: stagesOf(outcome.record.document), changes: describeWorkflowChanges(null, outcome.record.document) };
}

export async function replaceWorkflow(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, body: WorkflowReplace): Promise<WorkflowWrite> {
  const current = await findWorkflow(ctx, who, ref);
  assertStampsMatch({ ifMatch, bodyStamp: body.updated_at, stored: current.document, rule: 'utc-only' });
  if (body.slug !== current.slug) {
    rejectProblems([{ path: 'body.slug', message: `'${body.slug}' differs from the stored slug '${current.slug}'; a workflow's slug cannot change` }]);
  }
  return replaceWith(ctx, who, current, body);
}

/** Writes the content of a kept version as a new version, as a replace with that body would. */
export async function restoreWorkflow(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, versionRef: string): Promise<WorkflowWrite> {
  const current = await findWorkflow(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'utc-only' });
  const kept = await keptVersion(ctx.store.workflows.versions, current, versionRef, 'workflow');
  const old = JSON.parse(kept.json) as Workflow;
  return replaceWith(ctx, who, current, { ...old, updated_at: current.document.updated_at }, kept.version);
}

/** A replace of `current` (read, its stamp matched) by `body`; `restoredFrom`: the version whose content it restores. */
async function replaceWith(ctx: ServiceContext, who: Principal, current: WorkflowRecord, body: WorkflowReplace, restoredFrom?: number): Promise<WorkflowWrite> {
  const doc = materialiseWorkflow((await prepare(ctx, who, body)).document, current.document.updated_at);
  // The stamp is not a change (describeWorkflowChanges skips it): the changes are those of the document as stored.
  const changes = [...(restoredFrom === undefined ? [] : [restoredNote(restoredFrom)]), ...describeWorkflowChanges(current.document, doc)];
  const outcome = await ctx.store.workflows.replace(who.workspaceId, current.id, current.stampMicros, doc, { author: who.userId, changes });
  if (!outcome.ok) {
    throw staleConflict(
      `workflow '${current.slug}' changed while this write was prepared; read it again and rebase your change`,
      outcome.current?.document ?? null,
    );
  }
  return { record: outcome.record, applied: stagesOf(outcome.record.document), changes };
}

export async function deleteWorkflow(ctx: ServiceContext, who: Principal, ref: string): Promise<void> {
  const current = await findWorkflow(ctx, who, ref);
  await ctx.store.workflows.remove(who.workspaceId, current.id);
}

function stagesOf(doc: Workflow): string[] {
  return doc.schedule ? ['document', 'schedule'] : ['document'];
}
