// Names for the generated schema types that domain, store and handlers share.
import type { components } from '../../generated/api';

type S = components['schemas'];
export type Agent = S['Agent'];
export type AgentDraft = S['AgentDraft'];
export type AgentCreate = S['AgentCreate'];
export type AgentReplace = S['AgentReplace'];
export type AgentStatus = S['AgentStatus'];
export type AgentListItem = S['AgentListItem'];
export type Trigger = S['Trigger'];
export type TriggerInput = S['TriggerInput'];
export type Workflow = S['Workflow'];
export type WorkflowDraft = S['WorkflowDraft'];
export type WorkflowCreate = S['WorkflowCreate'];
export type WorkflowReplace = S['WorkflowReplace'];
export type WorkflowStep = S['WorkflowStep'];
export type WorkflowStepInput = S['WorkflowStepInput'];
export type WorkflowListItem = S['WorkflowListItem'];
export type Catalog = S['Catalog'];
export type CatalogApp = S['CatalogApp'];
export type CatalogTool = S['CatalogTool'];
export type CatalogModel = S['CatalogModel'];
/** The workspace limits the catalog reports (docs/documents.md); the same numbers are enforced on writes. */
export type WorkspaceLimits = S['WorkspaceLimits'];
export type Connection = S['Connection'];
export type EvalCriterion = S['EvalCriterion'];
export type EvalCheck = S['EvalCheck'];
export type EvalCase = S['EvalCase'];
export type EvalDataset = S['EvalDataset'];
export type EvalDatasetCreate = S['EvalDatasetCreate'];
export type EvalDatasetReplace = S['EvalDatasetReplace'];
export type EvalDatasetListItem = S['EvalDatasetListItem'];
export type EvalRequest = S['EvalRequest'];
export type EvalGate = S['EvalGate'];
export type EvalGateResult = S['EvalGateResult'];
export type EvalCaseResult = S['EvalCaseResult'];
export type EvalCriterionResult = S['EvalCriterionResult'];
export type EvalSummary = S['EvalSummary'];
export type EvalComparison = S['EvalComparison'];
export type Eval = S['Eval'];
export type EvalListItem = S['EvalListItem'];

/** One thing wrong with a request: the JSON path it concerns and the rule it breaks. */
export interface Problem {
  path: string;
  message: string;
}

export function describeProblems(problems: Problem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('; ');
}
export type JsonPatchOperation = S['JsonPatchOperation'];
export type DocumentVersionPage = S['DocumentVersionPage'];
export type Skill = S['Skill'];
export type SkillCreate = S['SkillCreate'];
export type SkillReplace = S['SkillReplace'];
export type SkillListItem = S['SkillListItem'];
