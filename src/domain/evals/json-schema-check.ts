// The schemas of `json_schema` checks: compiled by Ajv (draft-07) with RE2 for their `pattern`s, so a
// tenant's schema cannot make validation backtrack. `format` is not checked (its validators are
// regular expressions of JavaScript's engine), and `uniqueItems` is refused (quadratic). A schema is at most MAX_SCHEMA_BYTES as JSON, and at
// most MEMO_SIZE compiled schemas are kept: compiling is the costly part, validating is cheap.
import Ajv, { type ValidateFunction } from 'ajv';
import { boundedMemo } from '../bounded-memo';
import { compileLinear } from './linear-regex';

export const MAX_SCHEMA_BYTES = 8 * 1024;
const MEMO_SIZE = 256;

/** Ajv's regular-expression engine, as RE2; a pattern RE2 refuses fails the schema's compilation. */
const linearEngine = Object.assign(
  (pattern: string) => {
    const compiled = compileLinear(pattern);
    if ('problem' in compiled) throw new Error(`pattern '${pattern}' ${compiled.problem}`);
    return compiled;
  },
  { code: 're2js' },
);

const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: false, code: { regExp: linearEngine } });

export type SchemaValidator = ValidateFunction | { problem: string };

function compile(schemaJson: string): SchemaValidator {
  const schema = JSON.parse(schemaJson) as Record<string, unknown>;
  try {
    return ajv.compile(schema);
  } catch (err) {
    return { problem: `is not a JSON Schema this service can apply: ${(err as Error).message}` };
  } finally {
    // Ajv keeps every schema it compiled (and its $id); the memo is what is kept.
    ajv.removeSchema(schema);
  }
}

const compiled = boundedMemo(compile, MEMO_SIZE);

/** The validator of `schema`, or why it cannot be one (too large, not compilable). */
export function schemaValidator(schema: Record<string, unknown>): SchemaValidator {
  const json = JSON.stringify(schema);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_SCHEMA_BYTES) return { problem: `is ${bytes} bytes as JSON; at most ${MAX_SCHEMA_BYTES}` };
  // Ajv checks uniqueItems by comparing every pair of items: quadratic in a long text's array.
  if (json.includes('"uniqueItems"')) return { problem: 'uses uniqueItems, which this service does not check (it takes time quadratic in the array)' };
  return compiled(json);
}
