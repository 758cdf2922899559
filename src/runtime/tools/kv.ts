// The kv app: a key-value store per workspace, in the service's database.
import type { ToolImplementation } from './types';

const LIST_LIMIT = 1000;

export const kvTools: Record<string, ToolImplementation> = {
  'kv.get': async (args, ctx) => {
    const value = await ctx.kv.get(ctx.workspaceId, args.key as string);
    return { key: args.key, value: value === undefined ? null : value };
  },
  'kv.list': async (args, ctx) => ({ keys: await ctx.kv.list(ctx.workspaceId, (args.prefix as string | undefined) ?? '', LIST_LIMIT) }),
  'kv.set': async (args, ctx) => {
    await ctx.kv.set(ctx.workspaceId, args.key as string, args.value);
    return { key: args.key };
  },
  'kv.delete': async (args, ctx) => ({ deleted: await ctx.kv.delete(ctx.workspaceId, args.key as string) }),
};
