// A workspace's connections (issue 44): which app each connects to and the credentials its calls
// send. The credentials are write-only: sealed with the secret box before they reach the store,
// opened only for a call (connection-credentials.ts), shown only as their kind and the parts that
// are not secret. A connection to an MCP app is checked when its credentials are written and when
// asked (`test`): its status says whether the server answers tools/list with them. A connection of
// an app whose events arrive signed over HTTP holds the signing secret and gets a receiving URL; a
// new secret leaves the previous one verifying for a grace period (docs/triggers.md).
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { credentialProblems, shownOf, type ConnectionStatus, type Credentials } from '../domain/connections';
import { formatStamp } from '../domain/stamps';
import { conflict, notFound } from '../errors';
import { receivingCredentialsOf, McpFailure } from '../apps/registry';
import { CredentialsRefused, ToolError } from '../apps/types';
import type { ConnectionRecord } from '../store/port';
import { assertStampCurrent } from './concurrency';
import { credentialsContext } from './connection-credentials';
import type { Principal, ServiceContext } from './context';
import { usageOf, usageText } from './app-usage';
import { rejectProblems } from './references';

export type ConnectionView = components['schemas']['ConnectionDetail'];
type ConnectionCreate = components['schemas']['ConnectionCreate'];
type ConnectionReplace = components['schemas']['ConnectionReplace'];

/** What the connection use cases need (the command line's `connections add` has no more). */
export type ConnectionContext = Pick<ServiceContext, 'store' | 'apps' | 'secrets' | 'publicBaseUrl'>;

/** The most connections a workspace may have. */
export const MAX_WORKSPACE_CONNECTIONS = 200;

/** How long a replaced signing secret still verifies, unless the replace says (previous_valid_for_seconds). */
export const SIGNING_SECRET_GRACE_SECONDS = 86_400;

/** The path of a connection's receiving URL. */
export const receivePath = (receiverId: string) => `/events/${receiverId}`;

/** Until when a rotated signing secret still verifies, or null when none does now. */
const rotationEnd = (c: ConnectionRecord): string | null => (c.previous && c.previous.untilMs > Date.now() ? new Date(c.previous.untilMs).toISOString() : null);

export function connectionView(c: ConnectionRecord, publicBaseUrl: string): ConnectionView {
  return {
    ref: c.ref,
    app: c.app,
    label: c.label,
    receive_url: c.receiverId ? `${publicBaseUrl}${receivePath(c.receiverId)}` : null,
    status: c.status,
    credentials: c.credentialsShown.kind === 'signing_secret' ? { ...c.credentialsShown, previous_valid_until: rotationEnd(c) } : c.credentialsShown,
    last_error: c.lastError,
    tested_at: c.testedAt,
    updated_at: formatStamp(c.stampMicros),
  };
}

const unknownConnection = (ref: string) => notFound(`connection '${ref}' not found in this workspace; GET /api/build/connections lists them`);

async function stored(ctx: ConnectionContext, who: Principal, ref: string): Promise<ConnectionRecord> {
  const record = await ctx.store.connections.get(who.workspaceId, ref);
  if (!record) throw unknownConnection(ref);
  return record;
}

export async function getConnection(ctx: ConnectionContext, who: Principal, ref: string): Promise<ConnectionView> {
  return connectionView(await stored(ctx, who, ref), ctx.publicBaseUrl);
}

/** The credentials sealed (a signing secret without its replace's grace, which is no credential). */
function sealed(ctx: ConnectionContext, who: Principal, ref: string, credentials: Credentials): string | null {
  if (credentials.kind === 'none') return null;
  const kept = credentials.kind === 'signing_secret' ? { kind: credentials.kind, secret: credentials.secret } : credentials;
  return ctx.secrets.seal(JSON.stringify(kept), credentialsContext(who.workspaceId, ref));
}

/** What a connection of the workspace's app `app` holds to receive at a URL, when it is a built-in receiving app (its own app of that name is not). */
function receiving(apps: { isBuiltin(app: string): boolean }, app: string): ReceivingKind | undefined {
  return apps.isBuiltin(app) ? receivingCredentialsOf(app) : undefined;
}

type ReceivingKind = NonNullable<ReturnType<typeof receivingCredentialsOf>>;
const RECEIVING_KINDS: ReadonlySet<string> = new Set<ReceivingKind>(['signing_secret', 'whatsapp']);

/** A receiving app's connection holds the credentials its deliveries are checked with, and only such a connection does. */
function credentialsKindProblems(kind: ReceivingKind | undefined, app: string, credentials: Credentials | undefined): { path: string; message: string }[] {
  if (!credentials || kind === credentials.kind || (kind === undefined && !RECEIVING_KINDS.has(credentials.kind))) return [];
  const message =
    kind === 'whatsapp'
      ? `app '${app}' is a WhatsApp number: its connection holds { "kind": "whatsapp", "phone_number_id", "access_token", "app_secret", "verify_token" }`
      : kind === 'signing_secret'
        ? `app '${app}' sends signed deliveries: its connection holds the secret they are signed with ({ "kind": "signing_secret", "secret": "…" })`
        : credentials.kind === 'whatsapp'
          ? `only a connection of app 'whatsapp' holds whatsapp credentials`
          : `only a connection of an app that sends signed deliveries (github, stripe, slack, standard-webhooks, email) holds a signing_secret`;
  return [{ path: 'body.credentials.kind', message }];
}

/** A receiver id: random, 160 bits, no secret (the signature is the proof). */
const newReceiverId = () => `rcv_${crypto.randomBytes(20).toString('base64url')}`;

export async function createConnection(ctx: ConnectionContext, who: Principal, body: ConnectionCreate): Promise<ConnectionView> {
  const apps = await ctx.apps.of(who.workspaceId);
  const receives = apps.apps.has(body.app) ? receiving(apps, body.app) : undefined;
  rejectProblems([
    ...(apps.apps.has(body.app) ? [] : [{ path: 'body.app', message: `no app '${body.app}' in this workspace (GET /api/build/apps lists them)` }]),
    ...credentialProblems(body.credentials, 'body.credentials'),
    ...credentialsKindProblems(receives, body.app, body.credentials),
  ]);
  // Written first as unchecked (disconnected, never tested), then checked with what was stored:
  // the check reads the credentials as every call does.
  const outcome = await ctx.store.connections.create(
    who.workspaceId,
    {
      ref: body.ref,
      app: body.app,
      label: body.label ?? null,
      status: 'disconnected',
      credentialsShown: shownOf(body.credentials),
      sealedCredentials: sealed(ctx, who, body.ref, body.credentials),
      lastError: 'not checked yet',
      testedAt: null,
      receiverId: receives ? newReceiverId() : null,
    },
    MAX_WORKSPACE_CONNECTIONS,
  );
  if (!outcome.ok) {
    throw conflict(
      outcome.reason === 'ref_taken'
        ? `body.ref: '${body.ref}' is taken in this workspace`
        : `this workspace has reached its limit of ${MAX_WORKSPACE_CONNECTIONS} connections`,
    );
  }
  return connectionView(await recordCheck(ctx, who, outcome.record), ctx.publicBaseUrl);
}

export async function replaceConnection(
  ctx: ConnectionContext,
  who: Principal,
  ref: string,
  ifMatch: string,
  body: ConnectionReplace,
): Promise<ConnectionView> {
  const current = await stored(ctx, who, ref);
  assertStampCurrent(current.stampMicros, ifMatch, 'connection');
  rejectProblems([
    ...(body.ref === ref ? [] : [{ path: 'body.ref', message: `a connection's ref does not change (this one is '${ref}')` }]),
    ...(body.app === current.app ? [] : [{ path: 'body.app', message: `a connection does not move between apps (this one is '${current.app}''s)` }]),
    ...(body.credentials ? credentialProblems(body.credentials, 'body.credentials') : []),
    ...credentialsKindProblems(current.receiverId !== null ? receivingCredentialsOf(current.app) : undefined, current.app, body.credentials),
  ]);
  const credentials = body.credentials ? newCredentials(ctx, who, current, body.credentials) : {};
  const write = body.credentials
    ? { label: body.label ?? null, status: 'disconnected' as const, lastError: 'not checked yet', testedAt: null, ...credentials }
    : { label: body.label ?? null, status: current.status, lastError: current.lastError, testedAt: current.testedAt };
  const outcome = await ctx.store.connections.replace(who.workspaceId, ref, current.stampMicros, write);
  if (!outcome.ok) {
    if (!outcome.current) throw unknownConnection(ref);
    throw conflict(
      `the connection changed while it was being replaced (now "${formatStamp(outcome.current.stampMicros)}"); read it again and rebase your change`,
    );
  }
  return connectionView(body.credentials ? await recordCheck(ctx, who, outcome.record) : outcome.record, ctx.publicBaseUrl);
}

/**
 * What a replace with `credentials` writes: them, sealed, and for a signing secret that changes, the
 * one it replaces (still verifying until its grace period ends).
 */
function newCredentials(ctx: ConnectionContext, who: Principal, current: ConnectionRecord, credentials: Credentials) {
  let previous: ConnectionRecord['previous'] = null;
  if (credentials.kind === 'signing_secret' && current.sealedCredentials !== null) {
    const graceMs = (credentials.previous_valid_for_seconds ?? SIGNING_SECRET_GRACE_SECONDS) * 1000;
    const was = JSON.parse(ctx.secrets.open(current.sealedCredentials, credentialsContext(who.workspaceId, current.ref))) as Credentials;
    const changed = was.kind === 'signing_secret' && was.secret !== credentials.secret;
    if (changed && graceMs > 0) previous = { sealed: current.sealedCredentials, untilMs: Date.now() + graceMs };
    // The same secret again: the rotation under way (if any) goes on.
    else if (!changed) previous = current.previous;
  }
  return { sealedCredentials: sealed(ctx, who, current.ref, credentials), credentialsShown: shownOf(credentials), previous };
}

export async function deleteConnection(ctx: ConnectionContext, who: Principal, ref: string, ifMatch: string): Promise<void> {
  const current = await stored(ctx, who, ref);
  assertStampCurrent(current.stampMicros, ifMatch, 'connection');
  const used = usageText(await usageOf(ctx, who, { connection: ref }));
  if (used) throw conflict(`connection '${ref}' is named by ${used}; remove those first`);
  const removed = await ctx.store.connections.remove(who.workspaceId, ref, current.stampMicros);
  if (removed === 'missing') throw unknownConnection(ref);
  if (removed === 'stale') throw conflict('the connection changed while it was being deleted; read it again');
}

export async function testConnection(ctx: ConnectionContext, who: Principal, ref: string): Promise<ConnectionView> {
  return connectionView(await recordCheck(ctx, who, await stored(ctx, who, ref)), ctx.publicBaseUrl);
}

/** Checks the connection against its app now and records the outcome. */
async function recordCheck(ctx: ConnectionContext, who: Principal, record: ConnectionRecord): Promise<ConnectionRecord> {
  const check = await checkOf(ctx, who, record);
  return (await ctx.store.connections.recordCheck(who.workspaceId, record.ref, { ...check, testedAt: new Date().toISOString() })) ?? record;
}

/** A built-in app needs no check; an MCP app's server must answer tools/list through the connection. */
async function checkOf(ctx: ConnectionContext, who: Principal, record: ConnectionRecord): Promise<{ status: ConnectionStatus; lastError: string | null }> {
  if (ctx.apps.builtinSlugs.has(record.app)) return { status: 'connected', lastError: null };
  const app = await ctx.store.apps.get(who.workspaceId, record.app);
  if (!app) return { status: 'disconnected', lastError: `app '${record.app}' no longer exists in this workspace` };
  try {
    await ctx.apps.discover(who.workspaceId, app.settings, record.ref);
    return { status: 'connected', lastError: null };
  } catch (err) {
    if (err instanceof McpFailure) return { status: err.refused ? 'expired' : 'disconnected', lastError: err.message };
    if (err instanceof CredentialsRefused) return { status: 'expired', lastError: err.message };
    if (err instanceof ToolError) return { status: 'disconnected', lastError: err.message };
    throw err;
  }
}
