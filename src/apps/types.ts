// What an app is made of: its catalog entry and its tools, each tool's definition beside what it
// runs; what a tool gets when it runs, and how it fails.
import type { AppDefinition, EventDefinition, ToolDefinition } from '../domain/catalog';
import type { RenderBudget } from '../domain/templates';
import type { KvRepository } from '../store/port';
import type { RunLimits } from '../runtime/limits';
import type { ChainPosition } from '../domain/run-lineage';
import type { Team } from '../domain/spaces';
import type { Agent } from '../domain/types';

export interface HttpToolOptions {
  allowPrivate: boolean;
  /** The deadline of a whole exchange: lookups, connects, every redirect hop, every byte. */
  timeoutMs: number;
  /** What a whole exchange may carry: the request body and every response's headers and body. */
  maxBytes: number;
}

export interface ToolContext {
  workspaceId: string;
  kv: KvRepository;
  http: HttpToolOptions;
  /** The run's limits: a call's output and time, and what core.template may render. */
  limits: RunLimits;
  /** What the run may still render (shared by all its steps and calls). */
  budget: RenderBudget;
  /**
   * The connections a call may go through (an app whose calls need one): an agent's
   * `tools.connections` (`all` or refs), and the one a workflow step names. Absent: any.
   */
  connections?: ConnectionChoice;
  /** Told which connection a call went through (the run's record of the call says so). */
  usedConnection?: (ref: string) => void;
  /** The call's id in its run, for what the call starts to name it (an agent's calls). */
  callId?: string;
  /** Told the id of the run the call started (the run's record of the call names it). */
  startedRun?: (runId: string) => void;
  /** Whether the calling run was asked to stop. */
  shouldStop?: () => boolean;
  /** Told of a skill the call loaded (skills.load, skills.file): the run records the version. */
  loadedSkill?: (skill: LoadedSkill) => void;
  /**
   * How many app events led to the calling run (0: none started it); a kv write emits its event one
   * further along (services/app-events.ts bounds the chain).
   */
  eventChain?: number;
  /** Runs a workflow of the workspace as a child of the calling run; absent where no run calls (a poll's detector). */
  runWorkflow?: (call: ChildWorkflowCall) => Promise<ChildWorkflowOutcome>;
  /** Queues a channel tool's message in the calling agent run's outbox; absent where no agent run calls. */
  sendOnChannel?: (call: ChannelCall) => Promise<ChannelCallOutcome>;
}

/** A channel tool's call (email.reply, email.send, whatsapp.reply) as the run hands it to the outbox (services/channel-outbox.ts). */
export interface ChannelCall {
  tool: ChannelTool;
  args: Record<string, unknown>;
  callId: string;
}

export type ChannelTool = 'email.reply' | 'email.send' | 'whatsapp.reply';

/** The agent run whose channel tool is called: its agent as it runs, and what its request keeps of the message that started it (or null). */
export interface ChannelCaller {
  runId: string;
  workspaceId: string;
  agent: Agent;
  origin: unknown;
}

/** Queues a channel tool's message (services/channel-outbox.ts, wired at the composition root). */
export type ChannelSends = (caller: ChannelCaller, call: ChannelCall) => Promise<ChannelCallOutcome>;

/** What the call's model reads: the message's id and where it stands (`queued`, or `unsent` with why), never "sent" before it is. */
export interface ChannelCallOutcome {
  message_id: string;
  status: 'queued' | 'unsent' | 'sent' | 'delivered' | 'read' | 'failed';
  to: string[];
  note: string;
}

/** What a run records of a skill it loaded. */
export interface LoadedSkill {
  name: string;
  source: 'workspace' | 'marketplace';
  version: string;
}

/** A workflow tool's call, as the run that makes it hands it to the service that starts the child run. */
export interface ChildWorkflowCall {
  slug: string;
  args: Record<string, unknown>;
  callId: string;
  /** Told the child run's id as soon as it is accepted. */
  started: (runId: string) => void;
  shouldStop: () => boolean;
}

/** The run whose agent calls a workflow tool: who started its chain, where it stands in it, and the calling agent's space. */
export interface WorkflowToolCaller {
  runId: string;
  kind: 'agent' | 'workflow';
  workspaceId: string;
  /** Its `started_by` (a user, or a trigger or schedule): the child's too. */
  startedBy: string;
  /** Who alone may read the chain's runs (a test's starter), or null. */
  visibleTo: string | null;
  /** The space of the calling agent: it may call the workspace's workflows and its own team's. */
  team: Team;
  position: ChainPosition;
  /** How many app events led to the calling run: its children's kv writes go on from there. */
  eventChain: number;
}

/** Starts a workflow tool call's child run and waits for it (services/workflow-tools.ts, wired at the composition root). */
export type ChildWorkflows = (caller: WorkflowToolCaller, call: ChildWorkflowCall) => Promise<ChildWorkflowOutcome>;

export type ChildWorkflowOutcome = { ok: true; output: unknown; childRunId: string } | { ok: false; error: string; childRunId: string | null };

export interface ConnectionChoice {
  allowed: 'all' | readonly string[];
  /** The connection asked for: a workflow step's `connection`. */
  named?: string;
}

/** The headers a call through a connection sends (its credentials, opened; an OAuth token fetched). */
export interface CredentialSource {
  /** Throws a ToolError saying why when they cannot be had. */
  headersFor(workspaceId: string, ref: string): Promise<Record<string, string>>;
}

/** A failure the tool reports to its caller (a step or a model), as opposed to a bug. */
export class ToolError extends Error {}

/** A failure because a connection's credentials were refused (401, or the token endpoint's refusal). */
export class CredentialsRefused extends ToolError {}

export type ToolImplementation = (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;

/** A tool: what the catalog and the model see of it, and what a call runs. */
export interface AppTool {
  definition: ToolDefinition;
  run: ToolImplementation;
  /** The tool bounds its own time, past RUN_TOOL_TIMEOUT_SECONDS (a workflow tool waits RUN_WORKFLOW_TOOL_WAIT_SECONDS). */
  ownsTime?: boolean;
}

/**
 * An app as the registry holds it. Built-in apps are modules of src/apps/builtin/; a workspace's
 * own apps come from its documents. Its events are what it can start agents on (app_event
 * triggers); its channel, what an agent answers on.
 */
export interface AppModule {
  slug: string;
  name: string;
  description: string;
  tools: AppTool[];
  events?: EventDefinition[];
  /** How its events arrive over HTTP, signed (its connections get a receiving URL). */
  receiver?: EventReceiver;
  /**
   * The channel it is (email, WhatsApp): its tools are offered to an agent while the agent's channel
   * is enabled, and its connections receive the channel's messages at a receiving URL, holding
   * credentials of `credentials` kind.
   */
  channel?: { kind: 'email' | 'whatsapp'; credentials: 'signing_secret' | 'whatsapp' };
}

/** A delivery's header, by lower-case name (the first, when repeated). */
export type HeaderOf = (name: string) => string | undefined;

/** What a verified delivery is. */
export type ReceivedDelivery =
  /** An event: its name the app's way, its id (the same on every retry), and its payload. */
  | { kind: 'event'; event: string; deliveryId: string; payload: unknown }
  /** A delivery that starts nothing (GitHub's ping, a Slack notice): answered 200. */
  | { kind: 'notice'; what: string }
  /** A handshake the app expects answered with this body (Slack's url_verification). */
  | { kind: 'answer'; body: Record<string, unknown> }
  /** Not a delivery of this app (no event name or id): answered 400 naming what is missing. */
  | { kind: 'malformed'; reason: string };

/** An app whose events arrive over HTTP: how a delivery proves it is the app's, and what it says. */
export interface EventReceiver {
  /** Whether one of `secrets` (the connection's, then a rotated one still in its grace) signed the raw `body`. */
  verify(body: Buffer, header: HeaderOf, secrets: readonly string[], nowSeconds: number): { ok: true } | { ok: false; reason: string };
  /** The delivery as the app means it (called once verified). */
  read(body: Buffer, header: HeaderOf): ReceivedDelivery;
}

/** The catalog's view of an app: its entry with its tools' definitions. */
export function definitionOf(app: AppModule): AppDefinition {
  return { slug: app.slug, name: app.name, description: app.description, tools: app.tools.map((t) => t.definition), events: app.events ?? [] };
}

/** A tool of an app module: its definition (the flags as one word) beside what it runs. */
export function tool(
  slug: string,
  name: string,
  description: string,
  flags: 'read' | 'write' | 'destructive',
  args_schema: Record<string, unknown>,
  run: ToolImplementation,
): AppTool {
  return { definition: { slug, name, description, read_only: flags === 'read', destructive: flags === 'destructive', args_schema }, run };
}

/** The schema of an arguments object with exactly these members. */
export const objectOf = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});
