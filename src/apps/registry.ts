// The app registry: the one place that knows which apps exist. The catalog, the semantic checks of
// documents, the agent loop, the workflow executor and the poll triggers ask it for a workspace's
// apps, and call tools through what it answers, so a workspace's own apps (issue 44's MCP apps) are
// as real to them as the built-in ones. Nothing else imports an app module (.dependency-cruiser.cjs).
import type { AppDefinition, ToolDefinition } from '../domain/catalog';
import { coreApp } from './builtin/core';
import { httpApp } from './builtin/http';
import { kvApp } from './builtin/kv';
import { timeApp } from './builtin/time';
import { invokeTool, type ToolOutcome } from './invoke';
import { definitionOf, type AppModule, type AppTool, type ToolContext } from './types';

export type { ToolOutcome } from './invoke';

/** The apps every workspace has, in the catalog's order. */
const BUILTIN_APPS: readonly AppModule[] = [coreApp, httpApp, kvApp, timeApp];

/** The apps one workspace has, and its tools' calls. */
export interface WorkspaceApps {
  /** By slug, in the catalog's order. */
  readonly apps: ReadonlyMap<string, AppDefinition>;
  /** Every tool of those apps, by its slug (`<app>.<tool>`). */
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /** Whether the app is one every workspace has (its slug is reserved). */
  isBuiltin(app: string): boolean;
  /** Calls the tool named `slug` with `args` (an unknown slug is a failed outcome too). */
  invoke(slug: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export interface AppRegistry {
  /** The apps `workspaceId` has. */
  of(workspaceId: string): Promise<WorkspaceApps>;
}

function workspaceApps(modules: readonly AppModule[]): WorkspaceApps {
  const apps = new Map(modules.map((m) => [m.slug, definitionOf(m)] as const));
  const runnable = new Map<string, AppTool>(modules.flatMap((m) => m.tools.map((t) => [t.definition.slug, t] as const)));
  const tools = new Map([...runnable].map(([slug, t]) => [slug, t.definition] as const));
  const builtin = new Set(BUILTIN_APPS.map((m) => m.slug));
  return {
    apps,
    tools,
    isBuiltin: (app) => builtin.has(app),
    invoke: (slug, args, ctx) => invokeTool(slug, runnable.get(slug) ?? null, args, ctx),
  };
}

let builtin: WorkspaceApps | undefined;

/** The apps every workspace has, alone (what a workspace without apps of its own has). */
export function builtinApps(): WorkspaceApps {
  return (builtin ??= workspaceApps(BUILTIN_APPS));
}

/** The registry, built once at the composition root and passed down. */
export function createAppRegistry(): AppRegistry {
  const answer = Promise.resolve(builtinApps());
  return { of: () => answer };
}
