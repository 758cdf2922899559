// A signed delivery's body as its app sent it: JSON (parsed within the API's depth bound, and left
// out when parsing would change it), or GitHub's form encoding with the JSON in `payload`; and the
// events such an app declares.
import querystring from 'node:querystring';
import { parseExactJsonWithin } from '../../domain/json-exact';
import { NOT_JSON } from '../../domain/json-limits';
import type { EventDefinition } from '../../domain/catalog';
import type { HeaderOf } from '../types';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The body's JSON object, or null when it is not one. */
export function jsonObjectOf(body: Buffer, header: HeaderOf): Record<string, unknown> | null {
  let text = body.toString('utf8');
  const type = (header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const payload = querystring.parse(text).payload;
    if (typeof payload !== 'string') return null;
    text = payload;
  }
  const parsed = parseExactJsonWithin(text);
  return parsed !== NOT_JSON && isObject(parsed) ? parsed : null;
}

/** A member that must be a non-empty string of at most `max` characters, or null. */
export function textMember(value: unknown, max = 200): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : null;
}

/** An app's events (name, description), whose payload is what the app sends, described once. */
export const eventsSentAs = (payload: string, events: [name: string, description: string][]): EventDefinition[] =>
  events.map(([name, description]) => ({ name, description, payload_schema: { type: 'object', description: payload } }));
