// The app registry: the one place that knows which apps exist. The catalog, the semantic checks of
// documents, the agent loop, the workflow executor and the poll triggers ask it for a workspace's
// apps and call tools through what it answers, so a workspace's own apps (each backed by an MCP
// server) are as real to them as the built-in ones. Nothing else imports an app module
// (.dependency-cruiser.cjs). A workspace's view is built once per change of its apps or of its
// connections' refs (the store's snapshot key says when), and held for the workspaces asked lately.
import { MAX_APP_TOOLS, type AppSettings, type ListedMcpTool, type McpServerInfo } from '../domain/apps';
import type { AppDefinition, ToolDefinition } from '../domain/catalog';
import { boundedMemo } from '../domain/bounded-memo';
import type { Agent } from '../domain/types';
import type { AgentRepository, AppRepository, ConnectionRepository, SkillRepository, WorkflowRepository } from '../store/port';
import { EMPTY_MARKETPLACE, type SkillMarketplace } from './skills/marketplace';
import { agentToolsOf, SKILLS_APP, WORKFLOWS_APP, type AgentTools } from './agent-tools';
import { coreApp } from './builtin/core';
import { emailApp } from './builtin/email';
import { httpApp } from './builtin/http';
import { kvApp } from './builtin/kv';
import { timeApp } from './builtin/time';
import { whatsappApp } from './builtin/whatsapp';
import { githubApp } from './events/github';
import { slackApp } from './events/slack';
import { standardWebhooksApp } from './events/standard-webhooks';
import { stripeApp } from './events/stripe';
import { invokeTool, type ToolOutcome } from './invoke';
import { mcpAppModule } from './mcp/app-module';
import { listTools, serverInfoOf, withMcpSession } from './mcp/session';
import { definitionOf, type AppModule, type AppTool, type CredentialSource, type EventReceiver, type ToolContext } from './types';

export type { ToolOutcome } from './invoke';
export { McpFailure } from './mcp/session';
export { CONNECTION_ARGUMENT } from './mcp/app-module';
export { appToolsOf, NO_AGENT_TOOLS, WORKFLOWS_APP, type AgentTools } from './agent-tools';

/** The apps every workspace has, in the catalog's order. */
const BUILTIN_APPS: readonly AppModule[] = [coreApp, httpApp, kvApp, timeApp, emailApp, whatsappApp, githubApp, stripeApp, slackApp, standardWebhooksApp];
const BUILTIN_SLUGS: ReadonlySet<string> = new Set(BUILTIN_APPS.map((m) => m.slug));
/** The slugs no workspace app may take: the built-in apps', and the names of an agent's own tools (agent-tools.ts). */
const RESERVED_SLUGS: ReadonlySet<string> = new Set([...BUILTIN_SLUGS, WORKFLOWS_APP, SKILLS_APP]);

/** The snapshot key of a workspace with no apps or connections of its own. */
const NONE = '0:0|0:0';
/** The workspaces whose view is held at most (least recently asked go first). */
const HELD_WORKSPACES = 500;
/** The documents one agent's own tools are built from, held at most (agentTools). */
const LOOKUPS_PER_AGENT = 256;
/** The bytes one answer to a refresh's tools/list may have. */
const LIST_ANSWER_BYTES = 4 * 1024 * 1024;

/** The apps one workspace has, and its tools' calls. */
export interface WorkspaceApps {
  /** By slug: the built-in apps first, then the workspace's own. */
  readonly apps: ReadonlyMap<string, AppDefinition>;
  /** Every tool of those apps, by its slug (`<app>.<tool>`). */
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /** The refs of each app's connections (an app absent: none). */
  readonly connections: ReadonlyMap<string, readonly string[]>;
  /** Whether the app is one every workspace has (its slug is reserved). */
  isBuiltin(app: string): boolean;
  /** Whether the app's calls go through a connection (its `mcp.auth` is `connection`). */
  needsConnection(app: string): boolean;
  /** Calls the tool named `slug` with `args` (an unknown slug is a failed outcome too). */
  invoke(slug: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export interface AppRegistry {
  /** The slugs no workspace app may take. */
  readonly builtinSlugs: ReadonlySet<string>;
  /** The skills the deployment offers every workspace. */
  readonly marketplace: SkillMarketplace;
  /** The apps `workspaceId` has. */
  of(workspaceId: string): Promise<WorkspaceApps>;
  /** The tools `agent` has of its own (its workflows), as the workspace's documents stand now. */
  agentTools(workspaceId: string, agent: Agent): Promise<AgentTools>;
  /** Asks an app's MCP server for its tools, through connection `ref` when given. Throws McpFailure or ToolError. */
  discover(workspaceId: string, app: AppSettings, ref: string | null): Promise<{ tools: ListedMcpTool[]; server: McpServerInfo }>;
}

export interface AppRegistryDeps {
  store: {
    apps: AppRepository;
    connections: ConnectionRepository;
    workflows: Pick<WorkflowRepository, 'find'>;
    agents: Pick<AgentRepository, 'find'>;
    skills: Pick<SkillRepository, 'find'>;
  };
  /** The skills the deployment offers every workspace (none when absent). */
  marketplace?: SkillMarketplace;
  credentials: CredentialSource;
  /** The outbound address rule's exception (HTTP_TOOL_ALLOW_PRIVATE). */
  allowPrivate: boolean;
}

function workspaceApps(modules: readonly AppModule[], connections: ReadonlyMap<string, readonly string[]>, needing: ReadonlySet<string>): WorkspaceApps {
  const apps = new Map(modules.map((m) => [m.slug, definitionOf(m)] as const));
  const runnable = new Map<string, AppTool>(modules.flatMap((m) => m.tools.map((t) => [t.definition.slug, t] as const)));
  const tools = new Map([...runnable].map(([slug, t]) => [slug, t.definition] as const));
  return {
    apps,
    tools,
    connections,
    isBuiltin: (app) => BUILTIN_SLUGS.has(app),
    needsConnection: (app) => needing.has(app),
    invoke: (slug, args, ctx) => invokeTool(slug, runnable.get(slug) ?? null, args, ctx),
  };
}

const RECEIVERS: ReadonlyMap<string, EventReceiver> = new Map(BUILTIN_APPS.flatMap((m) => (m.receiver ? [[m.slug, m.receiver] as const] : [])));

/** How the built-in app `app` receives its events over HTTP, or undefined: it sends none that way. */
export const eventReceiverOf = (app: string): EventReceiver | undefined => RECEIVERS.get(app);

type ChannelOfApp = NonNullable<AppModule['channel']>;
const CHANNELS: ReadonlyMap<string, ChannelOfApp> = new Map(BUILTIN_APPS.flatMap((m) => (m.channel ? [[m.slug, m.channel] as const] : [])));

/** The channel the built-in app `app` is (its connections receive the channel's messages), or undefined. */
export const channelOf = (app: string): ChannelOfApp | undefined => CHANNELS.get(app);

/**
 * What a connection of the built-in app `app` must hold to receive at a URL (a signing secret, or
 * WhatsApp's credentials), or undefined: its connections receive nothing.
 */
export const receivingCredentialsOf = (app: string): ChannelOfApp['credentials'] | undefined =>
  CHANNELS.get(app)?.credentials ?? (RECEIVERS.has(app) ? 'signing_secret' : undefined);

let builtin: WorkspaceApps | undefined;

/** The apps every workspace has, alone (what a workspace without apps or connections of its own has). */
export function builtinApps(): WorkspaceApps {
  return (builtin ??= workspaceApps(BUILTIN_APPS, new Map(), new Set()));
}

/** The registry, built once at the composition root and passed down. */
export function createAppRegistry(deps: AppRegistryDeps): AppRegistry {
  const marketplace = deps.marketplace ?? EMPTY_MARKETPLACE;
  const held = new Map<string, { key: string; apps: WorkspaceApps }>();

  async function build(workspaceId: string): Promise<WorkspaceApps> {
    const [stored, connections] = await Promise.all([deps.store.apps.list(workspaceId), deps.store.connections.list(workspaceId)]);
    const byApp = new Map<string, string[]>();
    for (const c of connections) byApp.set(c.app, [...(byApp.get(c.app) ?? []), c.ref]);
    const own = stored.map((app) => mcpAppModule(app, byApp.get(app.slug) ?? [], deps));
    const needing = new Set(stored.filter((app) => app.settings.mcp.auth === 'connection').map((app) => app.slug));
    return workspaceApps([...BUILTIN_APPS, ...own], byApp, needing);
  }

  return {
    builtinSlugs: RESERVED_SLUGS,
    marketplace,
    async of(workspaceId) {
      const key = await deps.store.apps.snapshotKey(workspaceId);
      if (key === NONE) return builtinApps();
      const known = held.get(workspaceId);
      if (known?.key === key) {
        held.delete(workspaceId);
        held.set(workspaceId, known);
        return known.apps;
      }
      const apps = await build(workspaceId);
      held.delete(workspaceId);
      held.set(workspaceId, { key, apps });
      if (held.size > HELD_WORKSPACES) held.delete(held.keys().next().value as string);
      return apps;
    },
    async agentTools(workspaceId, agent) {
      // Each document read once for this agent: a workflow it lists may also be one its step agents
      // list, and a step agent may recur (judging the tools' flags walks them). The names come from
      // documents within their limits; the memo's bound only caps a pathological fan-out.
      const lookup = {
        workflow: boundedMemo(async (slug: string) => (await deps.store.workflows.find(workspaceId, slug))?.document ?? null, LOOKUPS_PER_AGENT),
        agent: boundedMemo(async (slug: string) => (await deps.store.agents.find(workspaceId, slug))?.document ?? null, LOOKUPS_PER_AGENT),
        // By name only (a UUID would find it by id): the agent lists names.
        skill: async (name: string) => {
          const found = await deps.store.skills.find(workspaceId, name);
          return found && found.slug === name ? found : null;
        },
      };
      return agentToolsOf(agent, await this.of(workspaceId), lookup, marketplace);
    },
    async discover(workspaceId, app, ref) {
      const headers = ref === null ? {} : await deps.credentials.headersFor(workspaceId, ref);
      const endpoint = { url: app.mcp.url, headers, timeoutMs: app.mcp.timeout_ms, maxBytes: LIST_ANSWER_BYTES, allowPrivate: deps.allowPrivate };
      return withMcpSession(endpoint, async (session) => ({ tools: await listTools(session, MAX_APP_TOOLS), server: serverInfoOf(session) }));
    },
  };
}
