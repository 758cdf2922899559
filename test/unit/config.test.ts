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
])('%j stops start-up naming the variable', (env, message) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
});
