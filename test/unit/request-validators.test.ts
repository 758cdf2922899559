// The build's request validators (ajv standalone code, src/http/request-validators.ts) answer as
// the ones ajv compiles at start would: the same verdicts and the same errors, for every operation;
// and a file compiled from another spec is not used.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { buildRequestValidators, createContractValidator } from '../../src/http/openapi';
import { precompiledRequestValidators } from '../../src/http/request-validators';
import { loadSpec } from '../../src/http/spec';

const spec = loadSpec();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-validators-'));
const file = path.join(dir, 'request-validators.js');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Requests that pass and fail in different ways: missing parts, wrong types, bad formats, long text, unknown fields. */
function sampleRequests() {
  const long = 'x'.repeat(70_000);
  const bodies: unknown[] = [
    undefined,
    {},
    [],
    'text',
    { kind: 'service.agent/v1', slug: 'ok', name: 'A' },
    { kind: 'service.agent/v1', slug: 'Not A Slug', name: long, instructions: '😀'.repeat(10), triggers: [{ type: 'nope' }] },
    {
      kind: 'service.workflow/v1',
      slug: 'w',
      name: 'W',
      steps: [
        { id: 'a', kind: 'tool', tool: 'core.echo' },
        { id: 'b', kind: 'bogus' },
      ],
    },
    { url: 'not a url', events: ['run.finished', 7], status: 'disabled', extra: true },
    { name: 'd', cases: [{ input: 'x', expected: null }], created_at: 'yesterday', id: 'not-a-uuid' },
  ];
  const parameters = [
    { path: {}, query: {}, header: {}, cookie: {} },
    {
      path: { agentId: 'not-a-uuid', runId: '6f0a4a53-8a4a-4b5e-9d44-9c0f3a1c2b11', slug: 'ok' },
      query: { limit: '0', status: ['nope'] },
      header: { 'if-match': '"x"' },
      cookie: {},
    },
    { path: { slug: 'ok' }, query: { limit: '20', cursor: 'c', since: '2026-01-01T00:00:00Z' }, header: {}, cookie: {} },
  ];
  return parameters.flatMap((p) => bodies.map((body) => (body === undefined ? { ...p } : { ...p, requestBody: body })));
}

function verdicts(validators: ValidateFunction[], request: unknown) {
  return validators.map((validate) => {
    const input = structuredClone(request); // the parameters' validator coerces in place
    return { valid: validate(input), errors: validate.errors ?? null, input };
  });
}

test("every operation's built validators give the verdicts and errors of the ones compiled at start", async () => {
  await buildRequestValidators(spec, file);
  const api = await createContractValidator(spec);
  const formats = api.validator.getAjv('requestBody' as never).formats as Record<string, unknown>;
  const built = precompiledRequestValidators(spec, formats, file);
  expect(built).not.toBeNull();
  const operations = api.getOperations();
  expect(operations.length).toBeGreaterThan(80);
  let refused = 0;
  for (const { operationId } of operations) {
    const compiled = (api.validator.getRequestValidatorsForOperation(operationId as string) ?? []) as ValidateFunction[];
    const fromBuild = built?.(operationId as string) ?? [];
    expect({ operationId, count: fromBuild.length }).toEqual({ operationId, count: compiled.length });
    for (const request of sampleRequests()) {
      const expected = verdicts(compiled, request);
      expect({ operationId, request, verdicts: verdicts(fromBuild, request) }).toEqual({ operationId, request, verdicts: expected });
      refused += expected.filter((v) => !v.valid).length;
    }
  }
  expect(refused).toBeGreaterThan(100); // the cases reach the schemas' rules, not only their happy paths
}, 60_000);

test('a file built from another spec is not used, nor a missing one', () => {
  const formats = {};
  expect(precompiledRequestValidators({ ...spec, text: `${spec.text}\n# edited` }, formats, file)).toBeNull();
  expect(precompiledRequestValidators(spec, formats, path.join(dir, 'none.js'))).toBeNull();
});
