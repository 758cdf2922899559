// What a call to an MCP tool answers the run: the server's structured content when it gave one,
// its text when every block is text, its content blocks otherwise; an error result is the call's
// error. An answer cut at the byte cap answers its beginning, and says it was cut.
import type { CallToolResult } from '@modelcontextprotocol/client';
import { ToolError } from '../types';

/** What of an error result's text the call's error keeps (characters). */
const ERROR_TEXT = 1000;

export function outputOf(slug: string, result: CallToolResult): unknown {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const texts = blocks.filter((b): b is { type: 'text'; text: string } => b?.type === 'text' && typeof (b as { text?: unknown }).text === 'string');
  if (result.isError) {
    const said = texts
      .map((b) => b.text)
      .join('\n')
      .slice(0, ERROR_TEXT);
    throw new ToolError(`${slug} failed: ${said || 'the server reported an error without text'}`);
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  if (texts.length === blocks.length) return texts.map((b) => b.text).join('\n');
  return { content: blocks };
}

/**
 * The output of an answer cut at `maxBytes`: the text its first text block began with (JSON
 * escapes decoded, in one pass over the prefix), and a notice.
 */
export function cutOutput(prefix: Buffer, maxBytes: number): { truncated: true; notice: string; text: string } {
  return {
    truncated: true,
    notice: `the server's answer is larger than ${maxBytes} bytes (the app's output_bytes or the run's step output limit, the smaller): what follows is the beginning of its text`,
    text: firstTextIn(prefix.toString('utf8')),
  };
}

const TEXT_MEMBER = '"text":"';
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** The value of the first `"text":"…` member of a JSON text that may stop anywhere, as far as it goes. */
export function firstTextIn(json: string): string {
  const start = json.indexOf(TEXT_MEMBER);
  if (start < 0) return '';
  let out = '';
  for (let i = start + TEXT_MEMBER.length; i < json.length; i++) {
    const c = json[i] as string;
    if (c === '"') break;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = json[i + 1];
    if (next === undefined) break;
    if (next === 'u') {
      const hex = json.slice(i + 2, i + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) break;
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 5;
    } else {
      out += ESCAPES[next] ?? next;
      i += 1;
    }
  }
  return out.isWellFormed() ? out : out.toWellFormed();
}
