// Catalog and connection operations.
import * as catalog from '../../services/catalog';
import type { Handlers } from './types';

export const catalogHandlers: Pick<Handlers, 'getCatalog' | 'getCatalogApp' | 'listConnections'> = {
  getCatalog: async ({ ctx, principal }) => ({ status: 200, body: { data: await catalog.getCatalog(ctx, principal) } }),
  getCatalogApp: async ({ ctx, principal, params }) => ({
    status: 200,
    body: { data: await catalog.getCatalogApp(ctx, principal, params.app) },
  }),
  listConnections: async ({ ctx, principal }) => ({ status: 200, body: { data: await catalog.listConnections(ctx, principal) } }),
};
