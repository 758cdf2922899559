// The kv app: a key-value store per workspace, in the service's database.
import { jsonBytesWithin } from '../../domain/json-limits';
import { uuidV7 } from '../../ids';
import type { KvWriteOrigin } from '../../store/port';
import { objectOf, tool, ToolError, type AppModule, type ToolContext } from '../types';

const LIST_LIMIT = 1000;
/** Keys one workspace may hold; a new key beyond is refused (the store checks it in the write). */
export const KV_MAX_KEYS = 10_000;
/** Bytes of one value, as JSON. */
export const KV_VALUE_BYTES = 256 * 1024;

/** A write's event: its own id, one further along the calling run's chain. */
const originOf = (ctx: ToolContext): KvWriteOrigin => ({ eventId: uuidV7(), chain: (ctx.eventChain ?? 0) + 1 });

// No U+0000: a key is stored as text, which PostgreSQL cannot hold it in.
const key = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000]*$' };

export const kvApp: AppModule = {
  slug: 'kv',
  name: 'Key-value store',
  description: 'A per-workspace key-value store.',
  events: [
    {
      name: 'key.set',
      description: 'A key was written (created or changed), by a tool call of a run of the workspace.',
      payload_schema: objectOf({ key, value: {} }, ['key', 'value']),
    },
    { name: 'key.deleted', description: 'A key was deleted, by a tool call of a run of the workspace.', payload_schema: objectOf({ key }, ['key']) },
  ],
  tools: [
    tool('kv.get', 'Get', 'Reads one key; value is null when the key is absent.', 'read', objectOf({ key }, ['key']), async (args, ctx) => {
      const value = await ctx.kv.get(ctx.workspaceId, args.key as string);
      return { key: args.key, value: value === undefined ? null : value };
    }),
    tool(
      'kv.list',
      'List',
      'Lists the keys, optionally those with a prefix.',
      'read',
      objectOf({ prefix: { type: 'string', maxLength: 200 } }),
      async (args, ctx) => ({
        keys: await ctx.kv.list(ctx.workspaceId, (args.prefix as string | undefined) ?? '', LIST_LIMIT),
      }),
    ),
    tool('kv.set', 'Set', 'Stores value under key.', 'write', objectOf({ key, value: {} }, ['key', 'value']), async (args, ctx) => {
      if (jsonBytesWithin(args.value, KV_VALUE_BYTES) === null)
        throw new ToolError(`args.value: larger than ${KV_VALUE_BYTES} bytes as JSON, the most one key holds`);
      if (!(await ctx.kv.set(ctx.workspaceId, args.key as string, args.value, KV_MAX_KEYS, originOf(ctx)))) {
        throw new ToolError(`the workspace holds ${KV_MAX_KEYS} keys, the most it may; delete some (kv.delete) before adding another`);
      }
      return { key: args.key };
    }),
    tool('kv.delete', 'Delete', 'Deletes one key.', 'destructive', objectOf({ key }, ['key']), async (args, ctx) => ({
      deleted: await ctx.kv.delete(ctx.workspaceId, args.key as string, originOf(ctx)),
    })),
  ],
};
