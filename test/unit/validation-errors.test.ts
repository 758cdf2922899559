import type { ErrorObject } from 'ajv';
import { callerPath, describeValidationErrors } from '../../src/domain/validation-errors';

const none = () => [];
const err = (e: Partial<ErrorObject>): ErrorObject => ({ instancePath: '', schemaPath: '#', keyword: 'x', params: {}, ...e }) as ErrorObject;

test('instance paths read as a caller writes them', () => {
  expect(callerPath('/requestBody/triggers/0/cron')).toBe('body.triggers[0].cron');
  expect(callerPath('/requestBody')).toBe('body');
  expect(callerPath('/path/runId')).toBe('runId');
  expect(callerPath('/header/if-match')).toBe('If-Match');
  expect(callerPath('/query/force')).toBe('query.force');
  expect(callerPath('/requestBody/args/a~1b')).toBe('body.args.a/b');
});

test('each keyword becomes a rule in words', () => {
  const message = describeValidationErrors(
    [
      err({ instancePath: '/requestBody', keyword: 'required', params: { missingProperty: 'name' } }),
      err({ instancePath: '/requestBody', keyword: 'additionalProperties', params: { additionalProperty: 'extra' } }),
      err({ instancePath: '/requestBody/max_steps', keyword: 'type', params: { type: 'integer' } }),
      err({ instancePath: '/requestBody/skills', keyword: 'maxItems', params: { limit: 50 } }),
      err({ instancePath: '/query/force', keyword: 'enum', params: { allowedValues: ['true'] } }),
    ],
    none,
  );
  expect(message).toBe(
    'body.name: required; body.extra: not allowed here (unknown or read-only member); body.max_steps: must be a whole number; body.skills: must have at most 50 items; query.force: must be one of true',
  );
});

test('a oneOf whose value matched no branch type lists the allowed forms in place', () => {
  const base = '#/properties/requestBody/properties/tools/properties/connections/oneOf';
  const message = describeValidationErrors(
    [
      err({ instancePath: '/requestBody/name', keyword: 'minLength', params: { limit: 1 } }),
      err({ instancePath: '/requestBody/tools/connections', schemaPath: `${base}/0/type`, keyword: 'type', params: { type: 'string' } }),
      err({ instancePath: '/requestBody/tools/connections', schemaPath: `${base}/0/enum`, keyword: 'enum', params: { allowedValues: ['all'] } }),
      err({ instancePath: '/requestBody/tools/connections', schemaPath: `${base}/1/type`, keyword: 'type', params: { type: 'array' } }),
      err({ instancePath: '/requestBody/tools/connections', schemaPath: base, keyword: 'oneOf', message: 'must match exactly one schema in oneOf' }),
      err({ instancePath: '/requestBody/max_steps', keyword: 'maximum', params: { comparison: '<=', limit: 40 } }),
    ],
    none,
  );
  expect(message).toBe('body.name: must be at least 1 character long; body.tools.connections: must be "all" or of type array; body.max_steps: must be <= 40');
});

test('a discriminator names the allowed tags', () => {
  const message = describeValidationErrors(
    [err({ instancePath: '/requestBody/steps/2', keyword: 'discriminator', params: { error: 'mapping', tag: 'kind', tagValue: 'x' } })],
    (path) => (path === 'body.steps[2]' ? ['tool', 'agent'] : []),
  );
  expect(message).toBe('body.steps[2].kind: must be one of tool, agent');
});

test('long lists are cut with a count of the rest', () => {
  const errors = Array.from({ length: 25 }, (_, i) => err({ instancePath: `/requestBody/a${i}`, keyword: 'type', params: { type: 'string' } }));
  expect(describeValidationErrors(errors, none)).toMatch(/; and 5 more problems$/);
});
