// What the catalog says of an app and its tools (the apps themselves: src/apps/, their registry).
// Each tool carries the JSON schema its arguments must satisfy and its read-only/destructive flags.
export interface ToolDefinition {
  slug: string;
  name: string;
  description: string;
  read_only: boolean;
  destructive: boolean;
  args_schema: Record<string, unknown>;
}

/** An event an app can start agents on (an `app_event` trigger names it), and what a run it starts receives. */
export interface EventDefinition {
  name: string;
  description: string;
  payload_schema: Record<string, unknown>;
}

export interface AppDefinition {
  slug: string;
  name: string;
  description: string;
  tools: ToolDefinition[];
  events: EventDefinition[];
}

/** The event a sender may name freely (standard-webhooks: any `type`), and a trigger on every event of its app. */
export const ANY_EVENT = '*';

/**
 * Whether `wanted` (an app_event trigger's event) names `declared` (a declared event, or one that
 * arrived): the event itself, its family (`pull_request` names `pull_request.opened`), or any
 * (`*`, on either side).
 */
export const eventMatches = (wanted: string, declared: string): boolean =>
  wanted === ANY_EVENT || declared === ANY_EVENT || declared === wanted || declared.startsWith(`${wanted}.`);

export const TRIGGER_TYPES = ['webhook', 'poll', 'app_event'] as const;
