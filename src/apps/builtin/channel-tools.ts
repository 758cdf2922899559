// The channel apps' tools (email, WhatsApp): each queues its message in the calling run's outbox
// through ToolContext.sendOnChannel, which only an agent run offers, and answers what the outbox
// recorded (queued, or unsent and why), never that the message was sent.
import { ToolError, tool, type AppTool, type ChannelTool } from '../types';

export function channelTool(slug: ChannelTool, name: string, description: string, argsSchema: Record<string, unknown>): AppTool {
  return tool(slug, name, description, 'write', argsSchema, async (args, ctx) => {
    if (!ctx.sendOnChannel || ctx.callId === undefined) throw new ToolError(`${slug}: only an agent's run can send on its channels`);
    return ctx.sendOnChannel({ tool: slug, args, callId: ctx.callId });
  });
}
