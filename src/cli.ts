// The `build-api` command: serve | token | connections add/list | credits set. Every subcommand
// reads the same environment as the server, so it works on the server's database and key pair.
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from './config';
import { exitOnStartupFailure, serve } from './main';
import { localIssuerFor } from './service';
import { openStore } from './store/open';
import { BUILD_SCOPE } from './auth/bearer';

const USAGE = `usage:
  build-api serve
  build-api token --user U --workspace W [--team T]... [--admin] [--scope "${BUILD_SCOPE}"] [--ttl SECONDS]
  build-api connections add --workspace W --app A --ref R [--label L] [--status connected|disconnected|expired]
  build-api connections list --workspace W
  build-api credits set --workspace W --amount N
Configuration comes from the environment (see README.md).`;

class UsageError extends Error {}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the class refuses control characters
const NAME = /^[^\s\u0000-\u001f]{1,160}$/;
const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const CONNECTION_STATUSES = ['connected', 'disconnected', 'expired'] as const;

function required(values: Record<string, unknown>, name: string, pattern: RegExp = NAME): string {
  const value = values[name];
  if (typeof value !== 'string' || !pattern.test(value)) throw new UsageError(`--${name}: required, 1..160 characters without spaces`);
  return value;
}

function wholeNumber(text: string, name: string, max: number): number {
  if (!/^\d+$/.test(text) || Number(text) > max) throw new UsageError(`--${name}: must be a whole number from 0 to ${max}`);
  return Number(text);
}

function teamsOf(teams: string[]): string[] {
  for (const team of teams)
    if (!SLUG.test(team) || team.length > 80)
      throw new UsageError(`--team: '${team}' is not a team slug (lowercase letters and digits joined by single hyphens)`);
  return [...new Set(teams)];
}

async function token(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      user: { type: 'string' },
      workspace: { type: 'string' },
      team: { type: 'string', multiple: true },
      admin: { type: 'boolean' },
      scope: { type: 'string' },
      ttl: { type: 'string' },
    },
  });
  if (config.auth.issuer) {
    throw new UsageError(`AUTH_ISSUER is set (${config.auth.issuer}): tokens come from that issuer, not from build-api token`);
  }
  const ttl = values.ttl === undefined ? 3600 : wholeNumber(values.ttl, 'ttl', 31_536_000);
  const store = await openStore(config);
  const issuer = await localIssuerFor(config, store).finally(() => store.close());
  const jwt = issuer.mint({
    sub: required(values, 'user'),
    audience: config.auth.audience,
    claims: {
      [config.auth.workspaceClaim]: required(values, 'workspace'),
      [config.auth.teamsClaim]: teamsOf(values.team ?? []),
      // The administrator grant is a scope beside `build` (AUTH_ADMIN_GRANT; docs/auth.md).
      scope: [values.scope ?? BUILD_SCOPE, ...(values.admin ? [config.auth.adminGrant] : [])].join(' '),
    },
    ttlSeconds: ttl,
  });
  process.stdout.write(`${jwt}\n`);
}

async function connections(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      workspace: { type: 'string' },
      app: { type: 'string' },
      ref: { type: 'string' },
      label: { type: 'string' },
      status: { type: 'string' },
    },
  });
  const store = await openStore(config);
  try {
    const workspace = required(values, 'workspace');
    if (action === 'add') {
      const status = (values.status ?? 'connected') as (typeof CONNECTION_STATUSES)[number];
      if (!CONNECTION_STATUSES.includes(status)) throw new UsageError(`--status: must be one of ${CONNECTION_STATUSES.join(', ')}`);
      if (values.label !== undefined && values.label.length > 160) throw new UsageError('--label: at most 160 characters');
      const connection = { ref: required(values, 'ref'), app: required(values, 'app', SLUG), label: values.label ?? null, status };
      await store.connections.upsert(workspace, connection);
      process.stdout.write(`${JSON.stringify(connection)}\n`);
    } else if (action === 'list') {
      process.stdout.write(`${JSON.stringify(await store.connections.list(workspace), null, 2)}\n`);
    } else {
      throw new UsageError(`connections: unknown action '${action ?? ''}' (add or list)`);
    }
  } finally {
    await store.close();
  }
}

async function credits(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'set') throw new UsageError(`credits: unknown action '${action ?? ''}' (set)`);
  const { values } = parseArgs({ args: rest, options: { workspace: { type: 'string' }, amount: { type: 'string' } } });
  const amount = wholeNumber(values.amount ?? '', 'amount', 1_000_000_000);
  const store = await openStore(config);
  try {
    const workspace = required(values, 'workspace');
    await store.workspaces.setCredits(workspace, amount);
    process.stdout.write(`${JSON.stringify({ workspace, credits: amount })}\n`);
  } finally {
    await store.close();
  }
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  try {
    const config = loadConfig();
    switch (command) {
      case 'serve':
        await serve(config);
        return;
      case 'token':
        return await token(config, args);
      case 'connections':
        return await connections(config, args);
      case 'credits':
        return await credits(config, args);
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(`${USAGE}\n`);
        return;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`build-api: ${(err as Error).message}\n${USAGE}\n`);
      process.exit(2);
    }
    exitOnStartupFailure(err);
  }
}
