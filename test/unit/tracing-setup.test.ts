// The start-up line names where traces go, never the credentials an OTLP endpoint's URL may carry.
import { withoutCredentials } from '../../src/tracing-setup';

test('an endpoint is shown without its user and password', () => {
  expect(withoutCredentials('https://user:s3cret@collector.example:4318/v1/traces')).toBe('https://collector.example:4318/v1/traces');
  expect(withoutCredentials('http://localhost:4318')).toBe('http://localhost:4318/');
  expect(withoutCredentials('not a url s3cret')).toBe('(an endpoint that is not a URL)');
});
