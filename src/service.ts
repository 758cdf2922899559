// Wires the parts of the service from a Config: the store, the token verifier (embedded issuer or
// an external one), and the HTTP app. main.ts listens; tests call this with a temporary database.
import type express from 'express';
import type { Config } from './config';
import { createBearerAuth } from './auth/bearer';
import { remoteKeySource, staticKeySource, type KeySource } from './auth/key-source';
import { openLocalIssuer, type LocalIssuer } from './auth/local-issuer';
import { createApp } from './http/app';
import type { Logger } from './log';
import { openSqliteStore, type Store } from './store';

export interface Service {
  app: express.Express;
  store: Store;
  /** Present when the service is its own issuer (no AUTH_ISSUER). */
  localIssuer: LocalIssuer | null;
  close(): void;
}

/** The issuer the embedded key pair signs as: the service's own public address. */
export function localIssuerFor(config: Config): LocalIssuer {
  return openLocalIssuer(config.dataDir, config.publicBaseUrl);
}

export async function createService(config: Config, logger: Logger, opts: { validateResponses?: boolean } = {}): Promise<Service> {
  const store = openSqliteStore(config.databasePath);
  const localIssuer = config.auth.issuer ? null : localIssuerFor(config);
  const issuer = config.auth.issuer ?? (localIssuer as LocalIssuer).issuer;
  const keySource: KeySource = localIssuer
    ? staticKeySource(localIssuer.jwks)
    : remoteKeySource({ issuer, jwksUri: config.auth.jwksUri });
  const resourceMetadataUrl = `${config.publicBaseUrl}/.well-known/oauth-protected-resource`;
  const app = await createApp({
    ctx: { store, limits: config.limits, publicBaseUrl: config.publicBaseUrl },
    store,
    logger,
    publicBaseUrl: config.publicBaseUrl,
    issuer,
    authenticate: createBearerAuth({
      issuer,
      audience: config.auth.audience,
      workspaceClaim: config.auth.workspaceClaim,
      keySource,
      resourceMetadataUrl,
    }),
    localJwks: localIssuer?.jwks,
    validateResponses: opts.validateResponses,
  });
  return { app, store, localIssuer, close: () => store.close() };
}
