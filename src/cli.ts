// The `build-api` command: serve | token | connections add/list | credits set | eval. Every subcommand
// but eval reads the same environment as the server, so it works on the server's database and key
// pair; eval is a client of a running service (eval-cli.ts).
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from './config';
import { exitOnStartupFailure, serve } from './main';
import { connectionContext, localIssuerFor } from './service';
import { createConnection, replaceConnection } from './services/connections';
import { credentialsShapeProblem, type Credentials } from './domain/connections';
import type { Store } from './store/port';
import { ApiError } from './errors';
import { createLogger } from './log';
import { openStore } from './store/open';
import { BUILD_SCOPE } from './auth/bearer';
import { EVAL_USAGE, EvalCommandError, evalCommand } from './eval-cli';

const USAGE = `usage:
  build-api serve
  build-api token --user U --workspace W [--team T]... [--admin] [--scope "${BUILD_SCOPE}"] [--ttl SECONDS]
  build-api connections add --workspace W --app A --ref R [--label L] [--credentials-stdin]
  build-api connections list --workspace W
  build-api credits set --workspace W --amount N
${EVAL_USAGE}
Configuration comes from the environment (see README.md).`;

class UsageError extends Error {}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the class refuses control characters
const NAME = /^[^\s\u0000-\u001f]{1,160}$/;
const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const CONNECTION_STATUSES = ['connected', 'disconnected', 'expired'] as const;
/** A connection's ref (ConnectionRefValue in openapi.yaml). */
const CONNECTION_REF = /^(?=.{1,120}$)[a-z0-9]+([:._-][a-z0-9]+)*$/;

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
      'credentials-stdin': { type: 'boolean' },
    },
  });
  const store = await openStore(config);
  try {
    const workspace = required(values, 'workspace');
    if (action === 'add') {
      if (values.status !== undefined && !CONNECTION_STATUSES.includes(values.status as (typeof CONNECTION_STATUSES)[number])) {
        throw new UsageError(`--status: must be one of ${CONNECTION_STATUSES.join(', ')}`);
      }
      if (values.status !== undefined) process.stderr.write("build-api: --status is ignored: a connection's status is what its last check found\n");
      if (values.label !== undefined && values.label.length > 160) throw new UsageError('--label: at most 160 characters');
      const connection = await addConnection(config, store, workspace, {
        ref: required(values, 'ref', CONNECTION_REF),
        app: required(values, 'app', SLUG),
        label: values.label ?? null,
        credentials: values['credentials-stdin'] ? await credentialsFromStdin() : undefined,
      });
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

/**
 * Adds the connection, or replaces the one with its ref (its credentials kept unless given), through
 * the service's own use cases: the same checks, sealing and test as PUT /api/build/connections.
 */
async function addConnection(
  config: Config,
  store: Store,
  workspaceId: string,
  body: { ref: string; app: string; label: string | null; credentials?: Credentials },
) {
  // Warnings (a missing SECRETS_KEY on PostgreSQL) go to stderr: stdout is the connection's JSON.
  const ctx = await connectionContext(config, store, createLogger('warn', process.stderr));
  const who = { userId: 'build-api-cli', workspaceId, teams: [], admin: true };
  try {
    if (!(await store.connections.get(workspaceId, body.ref)))
      return await createConnection(ctx, who, { ...body, credentials: body.credentials ?? { kind: 'none' } });
    return await replaceConnection(ctx, who, body.ref, '*', body);
  } catch (err) {
    if (err instanceof ApiError) throw new UsageError(err.message);
    throw err;
  }
}

/** The credentials as JSON on standard input (a secret on the command line would show in the process list). */
async function credentialsFromStdin(): Promise<Credentials> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  let credentials: unknown;
  try {
    credentials = JSON.parse(text);
  } catch {
    throw new UsageError('--credentials-stdin: standard input is not JSON (e.g. {"kind":"bearer","token":"…"})');
  }
  const problem = credentialsShapeProblem(credentials);
  if (problem) throw new UsageError(`--credentials-stdin: ${problem}`);
  return credentials as Credentials;
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

/** `build-api eval`: a client of a running service, so it reads none of the server's configuration. */
async function runEval(args: string[]): Promise<void> {
  try {
    process.exitCode = await evalCommand(args);
  } catch (err) {
    if (!(err instanceof EvalCommandError) && !(err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw err;
    process.stderr.write(`build-api eval: ${(err as Error).message}\n`);
    process.exitCode = 2;
  }
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  if (command === 'eval') return runEval(args);
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
