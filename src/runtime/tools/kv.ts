// The kv app: a key-value store per workspace, in the service's database.
import { jsonBytesWithin } from '../../domain/json-limits';
import { ToolError, type ToolImplementation } from './types';

const LIST_LIMIT = 1000;
/** Keys one workspace may hold; a new key beyond is refused (the store checks it in the write). */
export const KV_MAX_KEYS = 10_000;
/** Bytes of one value, as JSON. */
export const KV_VALUE_BYTES = 256 * 1024;

export const kvTools: Record<string, ToolImplementation> = {
  'kv.get': async (args, ctx) => {
    const value = await ctx.kv.get(ctx.workspaceId, args.key as string);
    return { key: args.key, value: value === undefined ? null : value };
  },
  'kv.list': async (args, ctx) => ({ keys: await ctx.kv.list(ctx.workspaceId, (args.prefix as string | undefined) ?? '', LIST_LIMIT) }),
  'kv.set': async (args, ctx) => {
    if (jsonBytesWithin(args.value, KV_VALUE_BYTES) === null) throw new ToolError(`args.value: larger than ${KV_VALUE_BYTES} bytes as JSON, the most one key holds`);
    if (!(await ctx.kv.set(ctx.workspaceId, args.key as string, args.value, KV_MAX_KEYS))) {
      throw new ToolError(`the workspace holds ${KV_MAX_KEYS} keys, the most it may; delete some (kv.delete) before adding another`);
    }
    return { key: args.key };
  },
  'kv.delete': async (args, ctx) => ({ deleted: await ctx.kv.delete(ctx.workspaceId, args.key as string) }),
};
