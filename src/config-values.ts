// Reading settings from the environment: each reader names the variable and the rule a bad value
// breaks.
import { trimEnd } from './domain/text';

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name}: must be a whole number, got '${raw}'`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name}: must be between ${min} and ${max}, got ${value}`);
  return value;
}

/**
 * An absolute http(s) URL. `trimSlash`: drop trailing slashes (a base URL that paths are appended
 * to). An issuer identifier is kept exactly as given: tokens' `iss` is compared with it verbatim.
 */
export function httpUrl(env: Env, name: string, fallback: string | null, trimSlash = true): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name}: must be an absolute http(s) URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name}: must be an http(s) URL, got '${raw}'`);
  }
  return trimSlash ? trimEnd(raw, '/') : raw;
}

export function nonEmpty(env: Env, name: string, fallback: string, pattern: RegExp, rule: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!pattern.test(raw)) throw new ConfigError(`${name}: ${rule}, got '${raw}'`);
  return raw;
}
