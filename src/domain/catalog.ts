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

export interface AppDefinition {
  slug: string;
  name: string;
  description: string;
  tools: ToolDefinition[];
}

export const TRIGGER_TYPES = ['webhook', 'poll', 'app_event'] as const;
