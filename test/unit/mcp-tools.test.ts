// The MCP tools generated from openapi.yaml: OpenAPI 3.0 schemas become JSON Schema that a strict
// validator compiles (nullable, references in $defs, OpenAPI-only keywords left out), and every
// tool's schemas accept what the REST operation accepts.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { loadSpec } from '../../src/http/spec';
import { SchemaConverter } from '../../src/mcp/json-schema';
import { toolName, toolsOf } from '../../src/mcp/tools';
import { example } from '../helpers/fixtures';

const strict = () => {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv;
};

describe('SchemaConverter', () => {
  const components = {
    Name: { type: 'string', minLength: 1, example: 'x', 'x-internal': true },
    Maybe: { type: 'string', nullable: true, enum: ['a', 'b'] },
    Box: {
      type: 'object',
      properties: { name: { $ref: '#/components/schemas/Name' }, inner: { $ref: '#/components/schemas/Box' } },
      discriminator: { propertyName: 'name' },
    },
    Either: { allOf: [{ $ref: '#/components/schemas/Name' }], nullable: true },
    Unused: { type: 'integer' },
  };
  const converter = new SchemaConverter(components);

  test("nullable becomes a null type (and a null in an enum); OpenAPI's own keywords are left out", () => {
    const schema = converter.standalone({
      type: 'object',
      properties: { m: { $ref: '#/components/schemas/Maybe' }, e: { $ref: '#/components/schemas/Either' } },
    });
    expect(schema.$defs).toEqual({
      Maybe: { type: ['string', 'null'], enum: ['a', 'b', null] },
      Either: { anyOf: [{ allOf: [{ $ref: '#/$defs/Name' }] }, { type: 'null' }] },
      Name: { type: 'string', minLength: 1 },
    });
    const validate = strict().compile(schema);
    expect(validate({ m: null, e: null })).toBe(true);
    expect(validate({ m: 'a', e: 'text' })).toBe(true);
    expect(validate({ m: 'c' })).toBe(false);
    expect(validate({ e: '' })).toBe(false);
  });

  test('references become $defs, each component once, recursive ones included; unreferenced ones are left out', () => {
    const schema = converter.standalone({ $ref: '#/components/schemas/Box' });
    expect(schema).toEqual({ $ref: '#/$defs/Box', $defs: { Box: expect.any(Object), Name: expect.any(Object) } });
    const validate = strict().compile(schema);
    expect(validate({ name: 'a', inner: { name: 'b' } })).toBe(true);
    expect(validate({ name: 'a', inner: { name: '' } })).toBe(false);
  });

  test('a reference outside the components, or to a missing one, fails at start rather than later', () => {
    expect(() => converter.standalone({ $ref: 'https://example.org/x.json' })).toThrow(/unsupported schema reference/);
    expect(() => converter.standalone({ $ref: '#/components/schemas/Missing' })).toThrow(/no schema Missing/);
  });
});

describe('the tools of openapi.yaml', () => {
  const tools = toolsOf(loadSpec());
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  test("every tool's input and output schema compiles in a strict JSON Schema 2020-12 validator, with type object at its root", () => {
    for (const tool of tools) {
      expect([tool.name, tool.inputSchema.type]).toEqual([tool.name, 'object']);
      expect(() => strict().compile(tool.inputSchema)).not.toThrow();
      if (tool.outputSchema) {
        expect([tool.name, tool.outputSchema.type]).toEqual([tool.name, 'object']);
        expect(() => strict().compile(tool.outputSchema!)).not.toThrow();
      }
    }
  });

  test("the spec's own examples pass the tools' schemas: a create's body as input, a read's reply as output", () => {
    const create = strict().compile(byName.get('create_agent')!.inputSchema);
    expect(create({ body: example('AgentCreateRequestExample') })).toBe(true);
    expect(create({ body: example('AgentCreateRequestExample'), extra: 1 })).toBe(false);
    const read = strict().compile(byName.get('get_agent')!.outputSchema!);
    expect(read((example('AgentResponseExample') as { data: unknown }).data)).toBe(true);
    const run = strict().compile(byName.get('get_agent_run')!.outputSchema!);
    expect(run((example('AgentRunResponseExample') as { data: unknown }).data)).toBe(true);
  });

  test('names are operationIds in snake_case; headers are if_match and idempotency_key', () => {
    expect(toolName('getCatalogApp')).toBe('get_catalog_app');
    expect(byName.get('replace_workflow')!.headerArgs).toEqual({ if_match: 'if-match' });
    expect(byName.get('test_workflow')!.headerArgs).toEqual({ idempotency_key: 'idempotency-key' });
    expect(byName.get('get_workflow_run')!.waitsFor).toBe('workflow');
    expect(byName.get('list_agent_runs')!.queryParams).toEqual(expect.arrayContaining(['limit', 'cursor']));
  });
});
