// The workspace's apps (issue 44): the built-in ones, read-only, and its own, each backed by an MCP
// server: created, read, replaced and deleted as documents are (compare-and-set on the stamp), and
// refreshed, which asks the server for its tools (through a connection when the app needs one)
// and keeps them, or keeps the last good ones and records why the refresh failed. Apps belong to
// the whole workspace (domain/spaces.ts).
import type { components } from '../../generated/api';
import { slugFromName } from '../domain/agent';
import { appSettings, toolChanges, toolsFromMcp, type DiscoveredTools } from '../domain/apps';
import type { AppDefinition } from '../domain/catalog';
import { formatStamp } from '../domain/stamps';
import { ApiError, badRequest, conflict, notFound } from '../errors';
import { builtinApps, McpFailure } from '../apps/registry';
import { ToolError } from '../apps/types';
import type { StoredApp } from '../store/port';
import { assertStampCurrent } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { usageOf, usageText } from './app-usage';

export type AppView = components['schemas']['App'];
type AppListItem = components['schemas']['AppListItem'];
type AppCreate = components['schemas']['AppCreate'];
type AppReplace = components['schemas']['AppReplace'];

/** The most apps of its own a workspace may have. */
export const MAX_WORKSPACE_APPS = 50;
/** The most bytes an app's tools may take as JSON (what every read of the workspace's apps carries). */
export const MAX_APP_TOOLS_BYTES = 1024 * 1024;

function builtinView(app: AppDefinition): AppView {
  return {
    kind: 'service.app/v1',
    slug: app.slug,
    name: app.name,
    description: app.description,
    builtin: true,
    mcp: null,
    tools: app.tools,
    refreshed_at: null,
    refresh_error: null,
    server: null,
    updated_at: null,
  };
}

export function appView(app: StoredApp): AppView {
  const { settings } = app;
  return {
    kind: 'service.app/v1',
    slug: app.slug,
    name: settings.name,
    description: settings.description,
    builtin: false,
    mcp: settings.mcp,
    tools: app.tools,
    refreshed_at: app.refreshedAt,
    refresh_error: app.refreshError,
    server: app.server,
    updated_at: formatStamp(app.stampMicros),
  };
}

export async function listApps(ctx: ServiceContext, who: Principal): Promise<AppListItem[]> {
  const builtin = [...builtinApps().apps.values()].map((a) => ({
    slug: a.slug,
    name: a.name,
    description: a.description,
    builtin: true,
    tools: a.tools.length,
    refreshed_at: null,
  }));
  const own = (await ctx.store.apps.list(who.workspaceId)).map((a) => ({
    slug: a.slug,
    name: a.settings.name,
    description: a.settings.description,
    builtin: false,
    tools: a.tools.length,
    refreshed_at: a.refreshedAt,
  }));
  return [...builtin, ...own].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
}

const unknownApp = (slug: string) => notFound(`app '${slug}' not found in this workspace; GET /api/build/apps lists them`);
const builtinRefusal = (slug: string, what: string) => conflict(`app '${slug}' is built in: it cannot be ${what}`);

export async function getApp(ctx: ServiceContext, who: Principal, slug: string): Promise<AppView> {
  const builtin = builtinApps().apps.get(slug);
  if (builtin) return builtinView(builtin);
  return appView(await storedApp(ctx, who, slug));
}

async function storedApp(ctx: ServiceContext, who: Principal, slug: string): Promise<StoredApp> {
  const app = await ctx.store.apps.get(who.workspaceId, slug);
  if (!app) throw unknownApp(slug);
  return app;
}

export async function createApp(ctx: ServiceContext, who: Principal, body: AppCreate): Promise<AppView> {
  const slug = body.slug ?? slugFromName(body.name, 30);
  const outcome = await ctx.store.apps.create(who.workspaceId, appSettings({ ...body, slug }), {
    limit: MAX_WORKSPACE_APPS,
    deriveSlug: body.slug === undefined,
    reserved: ctx.apps.builtinSlugs,
  });
  if (outcome.ok) return appView(outcome.app);
  if (outcome.reason === 'limit_reached') throw conflict(`this workspace has reached its limit of ${MAX_WORKSPACE_APPS} apps`);
  throw conflict(
    ctx.apps.builtinSlugs.has(slug)
      ? `body.slug: '${slug}' is a built-in app's; choose another slug`
      : `body.slug: '${slug}' is taken in this workspace; choose another slug or omit it to derive one from name`,
  );
}

export async function replaceApp(ctx: ServiceContext, who: Principal, slug: string, ifMatch: string, body: AppReplace): Promise<AppView> {
  if (ctx.apps.builtinSlugs.has(slug)) throw builtinRefusal(slug, 'replaced');
  const current = await storedApp(ctx, who, slug);
  assertStampCurrent(current.stampMicros, ifMatch, 'app');
  if (body.slug !== undefined && body.slug !== slug) throw badRequest(`body.slug: an app's slug does not change (this app is '${slug}')`);
  const outcome = await ctx.store.apps.replace(who.workspaceId, slug, current.stampMicros, appSettings({ ...body, slug }));
  if (outcome.ok) return appView(outcome.app);
  if (!outcome.current) throw unknownApp(slug);
  throw conflict(`the app changed while it was being replaced (now "${formatStamp(outcome.current.stampMicros)}"); read it again and rebase your change`);
}

export async function deleteApp(ctx: ServiceContext, who: Principal, slug: string, ifMatch: string): Promise<void> {
  if (ctx.apps.builtinSlugs.has(slug)) throw builtinRefusal(slug, 'deleted');
  const current = await storedApp(ctx, who, slug);
  assertStampCurrent(current.stampMicros, ifMatch, 'app');
  const connections = (await ctx.store.connections.list(who.workspaceId)).filter((c) => c.app === slug).map((c) => c.ref);
  const used = [usageText(await usageOf(ctx, who, { app: slug })), connections.length ? `connections ${connections.join(', ')}` : null].filter(Boolean);
  if (used.length) throw conflict(`app '${slug}' is in use: ${used.join('; ')}; remove those uses first`);
  const removed = await ctx.store.apps.remove(who.workspaceId, slug, current.stampMicros);
  if (removed === 'missing') throw unknownApp(slug);
  if (removed === 'stale') throw conflict('the app changed while it was being deleted; read it again');
}

export interface Refreshed {
  app: AppView;
  added: string[];
  removed: string[];
  skipped: DiscoveredTools['skipped'];
}

/** Asks the app's server for its tools and keeps them; a failure keeps the last good tools, records why, and is 502. */
export async function refreshApp(ctx: ServiceContext, who: Principal, slug: string, body: { connection?: string } | undefined): Promise<Refreshed> {
  if (ctx.apps.builtinSlugs.has(slug)) throw builtinRefusal(slug, "refreshed (its tools are the service's own)");
  const app = await storedApp(ctx, who, slug);
  const ref = await refreshConnection(ctx, who, app, body?.connection);
  let found: DiscoveredTools;
  let server: AppView['server'];
  try {
    const discovered = await ctx.apps.discover(who.workspaceId, app.settings, ref);
    found = toolsFromMcp(slug, discovered.tools, app.settings.mcp.trust_annotations);
    server = discovered.server;
    const bytes = Buffer.byteLength(JSON.stringify(found.tools));
    if (bytes > MAX_APP_TOOLS_BYTES) throw new ToolError(`the tools' definitions take ${bytes} bytes, more than the ${MAX_APP_TOOLS_BYTES} an app may keep`);
  } catch (err) {
    if (!(err instanceof McpFailure || err instanceof ToolError)) throw err;
    await ctx.store.apps.recordRefresh(who.workspaceId, slug, { error: err.message }, new Date().toISOString());
    throw new ApiError(502, `app '${slug}': ${err.message}`);
  }
  const recorded = await ctx.store.apps.recordRefresh(who.workspaceId, slug, { tools: found.tools, server: server! }, new Date().toISOString());
  if (!recorded) throw unknownApp(slug);
  return { app: appView(recorded), ...toolChanges(app.tools, found.tools), skipped: found.skipped };
}

/** The connection a refresh asks through: none for an app that needs none, else the one named, else the first by ref. */
async function refreshConnection(ctx: ServiceContext, who: Principal, app: StoredApp, asked: string | undefined): Promise<string | null> {
  const own = (await ctx.store.connections.list(who.workspaceId)).filter((c) => c.app === app.slug).map((c) => c.ref);
  if (asked !== undefined) {
    if (!own.includes(asked))
      throw badRequest(`body.connection: '${asked}' is not a connection of app '${app.slug}' (its connections: ${own.join(', ') || 'none'})`);
    return asked;
  }
  if (app.settings.mcp.auth !== 'connection') return null;
  if (!own.length)
    throw conflict(`app '${app.slug}' is asked through a connection (mcp.auth: connection), and it has none yet: create one (PUT /api/build/connections)`);
  return own[0] as string;
}
