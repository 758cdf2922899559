// Starts the real app in-process on a loopback port with a fresh database (a temporary SQLite file,
// or a PostgreSQL database with TEST_STORE=postgres: helpers/database.ts) and the embedded
// issuer, and hands tests a typed client generated from openapi.yaml (openapi-fetch over
// generated/api.ts): if the spec did not yield a usable SDK, these tests would not compile.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import createClient from 'openapi-fetch';
import type { paths } from '../../generated/api';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/log';
import { createService, type Service } from '../../src/service';
import { createHttpServer } from '../../src/http/server';
import { freshDatabase } from './database';

export interface TestService {
  baseUrl: string;
  config: Config;
  service: Service;
  dataDir: string;
  /** A token the service accepts, for this user and workspace (scope `build` unless given). */
  token(opts?: {
    user?: string;
    workspace?: string;
    scope?: string;
    teams?: string[];
    admin?: boolean;
    claims?: Record<string, unknown>;
    ttl?: number;
    now?: number;
  }): string;
  /** A typed client that sends `token` (or none when null). */
  client(token?: string | null): ReturnType<typeof createClient<paths>>;
  close(): Promise<void>;
}

/**
 * `env.DATABASE_PATH`: that SQLite file, whatever the store under test; otherwise a fresh database
 * of the store under test (test/helpers/database.ts).
 */
export async function startService(env: Record<string, string> = {}, mutate?: (config: Config) => void): Promise<TestService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-api-test-'));
  const database = env.DATABASE_PATH || env.DATABASE_URL ? null : await freshDatabase();
  const config = loadConfig({
    DATABASE_PATH: path.join(dataDir, 'build.db'),
    PUBLIC_BASE_URL: 'http://build.test',
    LOG_LEVEL: 'silent',
    ...database?.env,
    ...env,
  });
  mutate?.(config);
  const service = await createService(config, createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'), { validateResponses: true });
  const server: Server = await new Promise((resolve) => {
    const s = createHttpServer(service.app, config.connections).listen(0, '127.0.0.1', () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token: TestService['token'] = (opts = {}) =>
    service.localIssuer!.mint({
      sub: opts.user ?? 'user-1',
      audience: config.auth.audience,
      claims: {
        workspace: opts.workspace ?? 'ws-1',
        scope: [opts.scope ?? 'build', ...(opts.admin ? ['build:admin'] : [])].join(' '),
        ...(opts.teams && { teams: opts.teams }),
        ...opts.claims,
      },
      ttlSeconds: opts.ttl ?? 600,
      now: opts.now,
    });
  return {
    baseUrl,
    config,
    service,
    dataDir,
    token,
    client: (t = token()) => createClient<paths>({ baseUrl, headers: t ? { Authorization: `Bearer ${t}` } : {} }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await service.close();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
