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

/**
 * Whether `wanted` (an app_event trigger's event) names `declared`: the event itself, or its
 * family (`pull_request` names `pull_request.opened`).
 */
export const eventMatches = (wanted: string, declared: string): boolean => declared === wanted || declared.startsWith(`${wanted}.`);

export const TRIGGER_TYPES = ['webhook', 'poll', 'app_event'] as const;
