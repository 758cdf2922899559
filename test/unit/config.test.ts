import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

test('defaults', () => {
  const config = loadConfig({}, '/srv/app');
  expect(config).toMatchObject({
    port: 8080,
    host: '127.0.0.1',
    databasePath: path.resolve('/srv/app/data/build.db'),
    dataDir: path.resolve('/srv/app/data'),
    publicBaseUrl: 'http://localhost:8080',
    auth: { issuer: null, jwksUri: null, audience: 'build-api', workspaceClaim: 'workspace' },
    defaultCredits: 1000,
    logLevel: 'info',
  });
});

test('PUBLIC_BASE_URL follows PORT and loses a trailing slash', () => {
  expect(loadConfig({ PORT: '9000' }).publicBaseUrl).toBe('http://localhost:9000');
  expect(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.net/' }).publicBaseUrl).toBe('https://api.example.net');
});

test.each([
  [{ PORT: 'eighty' }, 'PORT: must be a whole number'],
  [{ PORT: '70000' }, 'PORT: must be between 0 and 65535'],
  [{ DEFAULT_CREDITS: '-1' }, 'DEFAULT_CREDITS: must be a whole number'],
  [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL: must be one of'],
  [{ AUTH_ISSUER: 'not a url' }, 'AUTH_ISSUER: must be an absolute http(s) URL'],
  [{ AUTH_JWKS_URI: 'https://issuer.example.net/jwks' }, 'AUTH_JWKS_URI: needs AUTH_ISSUER'],
  [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL: must be an http(s) URL'],
  [{ AUTH_AUDIENCE: 'has space' }, 'AUTH_AUDIENCE: must be'],
  [{ DATABASE_URL: 'mysql://u:p@db/build' }, 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
  [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL: must be a postgres:// URL'],
  [{ PG_POOL_SIZE: '0' }, 'PG_POOL_SIZE: must be between 1 and 1000'],
  [{ RUN_LEASE_SECONDS: '1' }, 'RUN_LEASE_SECONDS: must be between 2 and 3600'],
  [{ HTTP_IDLE_TIMEOUT_SECONDS: '15' }, 'HTTP_IDLE_TIMEOUT_SECONDS: must be longer than EVENTS_HEARTBEAT_SECONDS (15)'],
  [{ HTTP_MAX_CONNECTIONS: '0' }, 'HTTP_MAX_CONNECTIONS: must be between 1 and 1000000'],
  [{ RUN_STATE_BYTES: '10' }, 'RUN_STATE_BYTES: must be between 1024 and 268435456'],
  [{ RUN_TOOL_TIMEOUT_SECONDS: '0' }, 'RUN_TOOL_TIMEOUT_SECONDS: must be between 1 and 600'],
  [{ EVENT_STREAMS_PER_CALLER: '0' }, 'EVENT_STREAMS_PER_CALLER: must be between 1 and 10000'],
])('%j stops start-up naming the variable', (env, message) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
});

test("AUTH_ISSUER and AUTH_JWKS_URI are kept exactly as given (a token's iss is compared verbatim)", () => {
  const config = loadConfig({ AUTH_ISSUER: 'https://tenant.eu.auth0.com/', AUTH_JWKS_URI: 'https://tenant.eu.auth0.com/.well-known/jwks.json' });
  expect(config.auth.issuer).toBe('https://tenant.eu.auth0.com/');
  expect(config.auth.jwksUri).toBe('https://tenant.eu.auth0.com/.well-known/jwks.json');
  expect(loadConfig({ AUTH_ISSUER: 'https://sso.example.com/realms/acme' }).auth.issuer).toBe('https://sso.example.com/realms/acme');
});

test('AUTH_JWKS_CACHE_SECONDS sets the key cache lifetime (default ten minutes)', () => {
  expect(loadConfig({}).auth.jwksCacheMs).toBe(600_000);
  expect(loadConfig({ AUTH_JWKS_CACHE_SECONDS: '30' }).auth.jwksCacheMs).toBe(30_000);
  expect(() => loadConfig({ AUTH_JWKS_CACHE_SECONDS: '0' })).toThrow('AUTH_JWKS_CACHE_SECONDS: must be between 1 and 86400');
});

test('OPENAI_BASE_URL over plain http only for a loopback host (the key would travel in clear text)', () => {
  const models = { OPENAI_MODELS: 'm' };
  expect(() => loadConfig({ ...models, OPENAI_BASE_URL: 'http://api.example.com/v1' })).toThrow('OPENAI_BASE_URL: must be https');
  expect(() => loadConfig({ ...models, OPENAI_BASE_URL: 'http://10.0.0.5:8000/v1' })).toThrow(ConfigError);
  for (const url of ['https://api.example.com/v1', 'http://127.0.0.1:8000/v1', 'http://localhost:11434/v1', 'http://[::1]:8000/v1']) {
    expect(loadConfig({ ...models, OPENAI_BASE_URL: url }).openai!.baseUrl).toBe(url);
  }
});

test("EVAL_JUDGE_MODEL names one of the provider's models; unset, evals have no default judge", () => {
  const provider = { OPENAI_BASE_URL: 'https://api.example.com/v1', OPENAI_MODELS: 'judge-1,worker-1' };
  expect(loadConfig({}).evalJudgeModel).toBeNull();
  expect(loadConfig({ ...provider, EVAL_JUDGE_MODEL: 'judge-1' }).evalJudgeModel).toBe('judge-1');
  expect(() => loadConfig({ ...provider, EVAL_JUDGE_MODEL: 'judge-2' })).toThrow("EVAL_JUDGE_MODEL: 'judge-2' is not one of OPENAI_MODELS (judge-1, worker-1)");
  expect(() => loadConfig({ EVAL_JUDGE_MODEL: 'builtin/scripted' })).toThrow('OPENAI_BASE_URL is not set');
});

test('DATABASE_URL selects PostgreSQL (unset: the SQLite file); a refused value is not echoed, as it may carry a password', () => {
  expect(loadConfig({})).toMatchObject({ databaseUrl: null, pgPoolSize: 10, runLeaseMs: 30_000 });
  const url = 'postgresql://build:s3cret@db.internal:5432/build?sslmode=require';
  expect(loadConfig({ DATABASE_URL: url, PG_POOL_SIZE: '25', RUN_LEASE_SECONDS: '10' })).toMatchObject({
    databaseUrl: url,
    pgPoolSize: 25,
    runLeaseMs: 10_000,
  });
  expect(() => loadConfig({ DATABASE_URL: 'mysql://build:s3cret@db/build' })).toThrow(
    expect.objectContaining({ message: expect.not.stringContaining('s3cret') }),
  );
});

test('RUN_WORKERS defaults to 4 on SQLite and 32 on PostgreSQL (whose workers mostly wait for the database); one less per workspace', () => {
  expect(loadConfig({})).toMatchObject({ runWorkers: 4, runWorkersPerWorkspace: 3 });
  expect(loadConfig({ DATABASE_URL: 'postgres://db/build' })).toMatchObject({ runWorkers: 32, runWorkersPerWorkspace: 31 });
  expect(loadConfig({ DATABASE_URL: 'postgres://db/build', RUN_WORKERS: '6' })).toMatchObject({ runWorkers: 6, runWorkersPerWorkspace: 5 });
});

test('the channels: defaults, and each setting refused naming it; a relay URL refused is not echoed, as it may carry a password', () => {
  expect(loadConfig({}).channels).toEqual({
    emailDomain: 'agents.localhost',
    smtpPort: 2525,
    smtpPortSet: false,
    maxBytes: 10 * 1024 * 1024,
    maxRecipients: 10,
    maxClients: 20,
    dnsServers: [],
    relayUrl: null,
    senderRunsPerHour: 20,
    retryBaseMs: 30_000,
    graphBaseUrl: 'https://graph.facebook.com',
    graphVersion: 'v23.0',
  });
  const set = loadConfig({
    EMAIL_DOMAIN: 'Agents.Example.COM',
    SMTP_PORT: '25',
    EMAIL_DNS_SERVERS: '127.0.0.1:5353, [::1]:53',
    WHATSAPP_GRAPH_URL: 'http://127.0.0.1:9/',
  });
  expect(set.channels).toMatchObject({
    emailDomain: 'agents.example.com',
    smtpPort: 25,
    smtpPortSet: true,
    dnsServers: ['127.0.0.1:5353', '[::1]:53'],
    graphBaseUrl: 'http://127.0.0.1:9',
  });
  expect(() => loadConfig({ SMTP_RELAY_URL: 'http://user:hunter2@relay' })).toThrow(/^SMTP_RELAY_URL: must be an smtp:\/\/ or smtps:\/\/ URL/);
  expect(() => loadConfig({ SMTP_RELAY_URL: 'http://user:hunter2@relay' })).not.toThrow(/hunter2/);
  expect(() => loadConfig({ EMAIL_DNS_SERVERS: '127.0.0.1:53,not a server' })).toThrow("EMAIL_DNS_SERVERS: 'not a server' is not an address");
  expect(() => loadConfig({ EMAIL_DOMAIN: 'no_underscores.test' })).toThrow('EMAIL_DOMAIN: must be a domain name');
  expect(() => loadConfig({ WHATSAPP_GRAPH_VERSION: '23' })).toThrow('WHATSAPP_GRAPH_VERSION: must be a Graph API version');
  expect(() => loadConfig({ SMTP_MAX_BYTES: '10' })).toThrow('SMTP_MAX_BYTES: must be between 1024');
});
