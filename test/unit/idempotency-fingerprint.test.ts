// What makes two requests with one Idempotency-Key the same request: their canonical JSON (RFC 8785).
import { fingerprintOf } from '../../src/services/idempotency';

test('member order does not matter, values and array order do', () => {
  const a = fingerprintOf('PUT', '/api/build/agents', { force: 'true' }, { name: 'A', tools: { apps: ['kv', 'core'], approval: 'write' } });
  const b = fingerprintOf('PUT', '/api/build/agents', { force: 'true' }, { tools: { approval: 'write', apps: ['kv', 'core'] }, name: 'A' });
  expect(b.canonical).toBe(a.canonical);
  expect(b.legacy).not.toBe(a.legacy); // the fingerprint stored before: in the order sent
  expect(fingerprintOf('PUT', '/api/build/agents', { force: 'true' }, { name: 'A', tools: { apps: ['core', 'kv'], approval: 'write' } }).canonical).not.toBe(
    a.canonical,
  );
  expect(fingerprintOf('PUT', '/api/build/agents', { force: 'true' }, { name: 'B', tools: { apps: ['kv', 'core'], approval: 'write' } }).canonical).not.toBe(
    a.canonical,
  );
});

test('a number JSON cannot hold (1e400 parses as Infinity) has no canonical form: the request is still fingerprinted', () => {
  const f = fingerprintOf('POST', '/api/build/workflows/w/test', {}, JSON.parse('{"input":{"x":1e400}}'));
  expect(f.canonical).toBe(f.legacy);
});
