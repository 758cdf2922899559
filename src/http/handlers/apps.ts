// App and connection operations: read the validated request, call the service, shape the reply.
import crypto from 'node:crypto';
import { etagFor } from '../../domain/etag';
import * as apps from '../../services/apps';
import * as connections from '../../services/connections';
import type { Handlers } from './types';

/** A write's stamp as its ETag; a built-in app (no stamp) is tagged by what it is. */
const etagOf = (view: { updated_at: string | null }): Record<string, string> => ({
  ETag: view.updated_at === null ? `"${crypto.hash('sha256', JSON.stringify(view), 'base64url').slice(0, 22)}"` : etagFor(view.updated_at),
});
const ifMatch = (headers: Record<string, unknown>) => headers['if-match'] as string;

export const appHandlers: Pick<
  Handlers,
  | 'listApps'
  | 'createApp'
  | 'getApp'
  | 'replaceApp'
  | 'deleteApp'
  | 'refreshApp'
  | 'createConnection'
  | 'getConnection'
  | 'replaceConnection'
  | 'deleteConnection'
  | 'testConnection'
> = {
  listApps: async ({ ctx, principal }) => ({ status: 200, body: { data: await apps.listApps(ctx, principal) } }),
  createApp: async ({ ctx, principal, body }) => {
    const app = await apps.createApp(ctx, principal, body);
    return { status: 201, headers: { ...etagOf(app), Location: `/api/build/apps/${app.slug}` }, body: { data: app } };
  },
  getApp: async ({ ctx, principal, params }) => {
    const app = await apps.getApp(ctx, principal, params.app);
    return { status: 200, headers: etagOf(app), body: { data: app } };
  },
  replaceApp: async ({ ctx, principal, params, headers, body }) => {
    const app = await apps.replaceApp(ctx, principal, params.app, ifMatch(headers), body);
    return { status: 200, headers: etagOf(app), body: { data: app } };
  },
  deleteApp: async ({ ctx, principal, params, headers }) => {
    await apps.deleteApp(ctx, principal, params.app, ifMatch(headers));
    return { status: 204, noContent: true };
  },
  refreshApp: async ({ ctx, principal, params, body }) => {
    const { app, ...changes } = await apps.refreshApp(ctx, principal, params.app, body);
    return { status: 200, headers: etagOf(app), body: { data: app, ...changes } };
  },
  createConnection: async ({ ctx, principal, body }) => {
    const connection = await connections.createConnection(ctx, principal, body);
    return {
      status: 201,
      headers: { ...etagOf(connection), Location: `/api/build/connections/${encodeURIComponent(connection.ref)}` },
      body: { data: connection },
    };
  },
  getConnection: async ({ ctx, principal, params }) => {
    const connection = await connections.getConnection(ctx, principal, params.connectionRef);
    return { status: 200, headers: etagOf(connection), body: { data: connection } };
  },
  replaceConnection: async ({ ctx, principal, params, headers, body }) => {
    const connection = await connections.replaceConnection(ctx, principal, params.connectionRef, ifMatch(headers), body);
    return { status: 200, headers: etagOf(connection), body: { data: connection } };
  },
  deleteConnection: async ({ ctx, principal, params, headers }) => {
    await connections.deleteConnection(ctx, principal, params.connectionRef, ifMatch(headers));
    return { status: 204, noContent: true };
  },
  testConnection: async ({ ctx, principal, params }) => {
    const connection = await connections.testConnection(ctx, principal, params.connectionRef);
    return { status: 200, headers: etagOf(connection), body: { data: connection } };
  },
};
