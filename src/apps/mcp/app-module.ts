// A workspace's app backed by an MCP server, as the registry holds it: the tools its last refresh
// found, each of which calls the server in a session of its own (session.ts) through the
// connection the caller may use. A call's time is the shorter of the app's and the run's limit;
// its answer is read up to the smaller of the app's and the run's output limit, and an answer
// beyond is cut: the tool answers what came first, and says so.
import type { AppSettings } from '../../domain/apps';
import type { ToolDefinition } from '../../domain/catalog';
import type { StoredApp } from '../../store/port';
import { type AppModule, type ConnectionChoice, type CredentialSource, type ToolContext, ToolError } from '../types';
import { McpFailure, withMcpSession } from './session';
import { outputOf, cutOutput } from './tool-output';

export interface McpAppDeps {
  credentials: CredentialSource;
  allowPrivate: boolean;
}

/** The app module of a stored app; `connections`: the refs of the app's connections in the workspace. */
export function mcpAppModule(app: StoredApp, connections: readonly string[], deps: McpAppDeps): AppModule {
  const { settings } = app;
  return {
    slug: app.slug,
    name: settings.name,
    description: settings.description ?? '',
    tools: app.tools.map((definition) => {
      // `connection` is the service's argument only when the tool has no argument of that name itself.
      const takesConnection = settings.mcp.auth === 'connection' && !hasOwnArgument(definition, CONNECTION_ARGUMENT);
      return {
        definition: takesConnection ? withConnectionArgument(definition) : definition,
        run: (args, ctx) => callTool(settings, definition, takesConnection, args, ctx, connections, deps),
      };
    }),
  };
}

const hasOwnArgument = (definition: ToolDefinition, name: string) => Object.hasOwn((definition.args_schema.properties ?? {}) as object, name);

/** The tool's schema with the optional `connection` argument. */
function withConnectionArgument(definition: ToolDefinition): ToolDefinition {
  const properties = (definition.args_schema.properties ?? {}) as Record<string, unknown>;
  const connection = {
    type: 'string',
    description: "The connection the call goes through (needed when several may be used; the app's only usable one otherwise).",
  };
  return { ...definition, args_schema: { ...definition.args_schema, properties: { ...properties, [CONNECTION_ARGUMENT]: connection } } };
}

/** The argument a caller names a connection by, when the app's calls go through one. */
export const CONNECTION_ARGUMENT = 'connection';

async function callTool(
  app: AppSettings,
  tool: ToolDefinition,
  ours: boolean,
  args: Record<string, unknown>,
  ctx: ToolContext,
  connections: readonly string[],
  deps: McpAppDeps,
) {
  const name = tool.slug.slice(app.slug.length + 1);
  const { [CONNECTION_ARGUMENT]: asked, ...toolArgs } = args;
  const ref =
    app.mcp.auth === 'connection' ? chooseConnection(app.slug, connections, ctx.connections, ours && typeof asked === 'string' ? asked : undefined) : null;
  const callArgs = ours ? toolArgs : args;
  const headers = ref === null ? {} : await deps.credentials.headersFor(ctx.workspaceId, ref);
  if (ref !== null) ctx.usedConnection?.(ref);
  const maxBytes = Math.min(app.mcp.output_bytes, ctx.limits.stepOutputBytes);
  const endpoint = { url: app.mcp.url, headers, timeoutMs: Math.min(app.mcp.timeout_ms, ctx.limits.toolTimeoutMs), maxBytes, allowPrivate: deps.allowPrivate };
  let cut: Buffer | null = null;
  try {
    const result = await withMcpSession(endpoint, async (session) => {
      try {
        return await session.client.callTool({ name, arguments: callArgs }, session.request);
      } catch (err) {
        cut = session.cut()?.prefix ?? null;
        throw err;
      }
    });
    return outputOf(`${app.slug}.${name}`, result);
  } catch (err) {
    if (cut) return cutOutput(cut, maxBytes);
    throw err instanceof McpFailure ? new ToolError(`${app.slug}.${name}: ${err.message}`) : err;
  }
}

/**
 * The connection a call goes through: the one the caller named (it must be usable), else the one
 * usable connection of the app. Usable: a connection of the app the caller may use.
 */
export function chooseConnection(app: string, connections: readonly string[], choice: ConnectionChoice | undefined, asked: string | undefined): string {
  const allowed = choice?.allowed ?? 'all';
  const usable = allowed === 'all' ? [...connections] : connections.filter((ref) => allowed.includes(ref));
  const named = asked ?? choice?.named;
  if (named !== undefined) {
    if (usable.includes(named)) return named;
    throw new ToolError(`connection '${named}' is not a connection of app '${app}' that this call may use (${usableText(usable)})`);
  }
  if (usable.length === 1) return usable[0] as string;
  if (usable.length === 0) {
    throw new ToolError(
      `app '${app}' needs a connection, and none may be used: ${connections.length ? `the agent's tools.connections names none of ${connections.join(', ')}` : 'the workspace has none (PUT /api/build/connections)'}`,
    );
  }
  throw new ToolError(`app '${app}' has several connections this call may use (${usable.join(', ')}): name one in the '${CONNECTION_ARGUMENT}' argument`);
}

const usableText = (usable: readonly string[]) => (usable.length ? `usable: ${usable.join(', ')}` : 'none is usable');
