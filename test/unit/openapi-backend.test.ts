// What src/http/openapi.ts relies on in openapi-backend to start quickly: the spec is not checked
// against the OpenAPI schema again at each start, and no response validator is compiled until a
// reply is checked. These fail when the library changes what the service's start-up relies on.
import OpenAPIBackend from 'openapi-backend';
import { createContractValidator } from '../../src/http/openapi';
import { loadSpec } from '../../src/http/spec';

test("the backend loads the spec without openapi-backend's schema check, and compiles no response validator before one is used", async () => {
  const check = jest.spyOn(OpenAPIBackend.prototype, 'validateDefinition');
  try {
    const api = await createContractValidator(loadSpec());
    expect(check).not.toHaveBeenCalled();
    // The validator's stores, named as openapi-backend names them: empty until asked.
    const validator = api.validator as unknown as {
      responseValidators: Record<string, unknown>;
      statusBasedResponseValidators: Record<string, unknown>;
      requestValidators: Record<string, unknown>;
    };
    expect([Object.keys(validator.responseValidators), Object.keys(validator.statusBasedResponseValidators), Object.keys(validator.requestValidators)]).toEqual(
      [[], [], []],
    );

    // Asked for, a reply is checked (a validator compiled then): a wrong body is refused, a right one passes.
    expect(api.validateResponse({ data: 'not a list' }, 'listAgents', 200).errors?.length).toBeGreaterThan(0);
    expect(Object.keys(validator.statusBasedResponseValidators)).toEqual(['listAgents']);
    expect(api.validateResponse({ error: 'x' }, 'listAgents', 401).errors ?? []).toEqual([]);
  } finally {
    check.mockRestore();
  }
});
