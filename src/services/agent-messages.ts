// The agent's conversation view (`GET /api/build/agents/{ref}/messages`, docs/channels.md): its
// channel messages, received and sent, newest first, paged by a keyset on the time-ordered id as
// the run lists are. Readable by whoever reads the agent.
import type { components } from '../../generated/api';
import { badRequest } from '../errors';
import { isUuid } from '../ids';
import type { ChannelMessageRow, MessageChannel } from '../store/port';
import { findAgent } from './agents';
import type { Principal, ServiceContext } from './context';
import { DEFAULT_PAGE, decodeCursor, pageOf, type Page } from './pages';
import type { ListParams } from './run-lists';

type ChannelMessage = components['schemas']['ChannelMessage'];
type ChannelMessagePage = components['schemas']['ChannelMessagePage'];

const CHANNELS: readonly MessageChannel[] = ['email', 'whatsapp'];

const one = (params: ListParams, name: string): string | undefined => {
  const value = params[name];
  if (Array.isArray(value)) throw badRequest(`${name}: give it at most once`);
  return value;
};

export const messageView = (row: ChannelMessageRow): ChannelMessage => ({
  id: row.id,
  channel: row.channel,
  direction: row.direction,
  status: row.status,
  reason: row.reason,
  from: row.from,
  to: row.to,
  subject: row.subject,
  preview: row.preview,
  message_id: row.messageId,
  run_id: row.runId,
  created_at: row.createdAt,
  sent_at: row.sentAt,
  error: row.error,
});

export async function listAgentMessages(ctx: ServiceContext, who: Principal, ref: string, params: ListParams): Promise<Page<ChannelMessagePage>> {
  const agent = await findAgent(ctx, who, ref);
  const limitText = one(params, 'limit');
  const limit = limitText === undefined ? DEFAULT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest('limit: must be a whole number from 1 to 100');
  const channel = one(params, 'channel');
  if (channel !== undefined && !CHANNELS.includes(channel as MessageChannel)) throw badRequest(`channel: must be one of ${CHANNELS.join(', ')}`);
  const cursor = one(params, 'cursor');
  const beforeId = cursor === undefined ? undefined : decodeCursor(cursor, ({ id }) => (typeof id === 'string' && isUuid(id) ? id.toLowerCase() : undefined));
  const rows = await ctx.store.channelMessages.list({
    workspaceId: who.workspaceId,
    agentId: agent.id,
    ...(channel !== undefined && { channel: channel as MessageChannel }),
    ...(beforeId !== undefined && { beforeId }),
    limit: limit + 1,
  });
  return pageOf(
    rows,
    limit,
    (row) => JSON.stringify(messageView(row)),
    (last) => ({ id: last.id }),
  );
}
