// The catalog a document may reference: built-in models, the workspace's apps (the app registry's),
// trigger types, the workspace's limits and, per app, how many connections the workspace has.
import { notFound } from '../errors';
import { TRIGGER_TYPES } from '../domain/catalog';
import type { Catalog, CatalogApp, Connection } from '../domain/types';
import type { Principal, ServiceContext } from './context';

function connectionsPerApp(connections: Connection[]): (app: string) => number {
  const counts = new Map<string, number>();
  for (const c of connections) counts.set(c.app, (counts.get(c.app) ?? 0) + 1);
  return (app) => counts.get(app) ?? 0;
}

export async function getCatalog(ctx: ServiceContext, who: Principal): Promise<Catalog> {
  const count = connectionsPerApp(await ctx.store.connections.list(who.workspaceId));
  const { apps } = await ctx.apps.of(who.workspaceId);
  return {
    models: ctx.models,
    apps: [...apps.values()].map((app) => ({ slug: app.slug, name: app.name, connections: count(app.slug), tools: app.tools.length })),
    skills: [...ctx.apps.marketplace.skills.values()].map((s) => ({ slug: s.slug, name: s.name, description: s.description, version: s.version })),
    trigger_types: [...TRIGGER_TYPES],
    limits: ctx.limits,
  };
}

export async function getCatalogApp(ctx: ServiceContext, who: Principal, slug: string): Promise<CatalogApp> {
  const app = (await ctx.apps.of(who.workspaceId)).apps.get(slug);
  if (!app) throw notFound(`app '${slug}' not found; GET /api/build/catalog lists the apps`);
  const count = connectionsPerApp(await ctx.store.connections.list(who.workspaceId));
  return { slug: app.slug, name: app.name, description: app.description, connections: count(app.slug), tools: app.tools, events: app.events };
}

export async function listConnections(ctx: ServiceContext, who: Principal): Promise<Connection[]> {
  return ctx.store.connections.list(who.workspaceId);
}
