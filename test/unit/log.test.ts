import { Writable } from 'node:stream';
import { createLogger, logAccess, loggablePath, type AccessLine } from '../../src/log';

test('a logged path has no query string, and a webhook path has its secret masked', () => {
  expect(loggablePath('/api/build/agents/a?access_token=secret')).toBe('/api/build/agents/a');
  const id = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
  expect(loggablePath(`/hooks/${id}/whk_secret?x=1`)).toBe(`/hooks/${id}/[redacted]`);
  expect(loggablePath(`/hooks/${id}/whk_secret/more`)).toBe(`/hooks/${id}/[redacted]/[redacted]`);
  expect(loggablePath('/healthz')).toBe('/healthz');
});

test.each([
  ['a doubled leading slash', `//hooks/ID/whk_secret`, `//hooks/ID/[redacted]`],
  ['a doubled slash before the secret', `/hooks/ID//whk_secret`, `/hooks/ID//[redacted]`],
  ['no trigger id', `/hooks//whk_secret`, `/hooks//[redacted]`],
  ['the secret where the id goes', `/hooks/whk_secret`, `/hooks/[redacted]`],
  ['upper case', `/HOOKS/ID/whk_secret`, `/HOOKS/ID/[redacted]`],
  ['percent-encoded', `/%68ooks/ID/whk_secret`, `/%68ooks/ID/[redacted]`],
  ['a prefix', `/x/hooks/ID/whk_secret/`, `/x/hooks/ID/[redacted]/`],
])('a webhook secret is masked however the path is spelled: %s', (_name, path, logged) => {
  const id = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
  expect(loggablePath(path.replace('ID', id))).toBe(logged.replace('ID', id));
  expect(loggablePath(path.replace('ID', id))).not.toContain('whk_secret');
});

test('log lines carry an ISO 8601 UTC time of when they were written', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('info', sink);
  const before = Date.now();
  logger.info('one');
  await new Promise((r) => setTimeout(r, 5));
  logger.info('two');
  const after = Date.now();
  const times = lines.map((line) => (JSON.parse(line) as { time: string }).time);
  expect(times).toHaveLength(2);
  for (const time of times) {
    expect(time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(time)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(time)).toBeLessThanOrEqual(after);
  }
  expect(Date.parse(times[1]!)).toBeGreaterThan(Date.parse(times[0]!)); // not a stale cached time
});

test("a request's access line is the line pino writes for the same fields (built by hand: src/log.ts logAccess)", () => {
  const lines: string[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('info', sink);
  const cases: AccessLine[] = [
    { reqId: '0190a0c4-5f1e-7cc2-8e51-3c1b4f1d2a11', method: 'GET', path: '/api/build/agents/support', status: 200, ms: 1.2345678901234, workspace: 'acme' },
    { reqId: 'caller.chosen-id_1', method: 'POST', path: '/api/build/agents/caf%C3%A9/x"y\\z', status: 401, ms: 0.05, workspace: undefined },
    { reqId: 'r', method: 'PUT', path: '/api/build/agents/a', status: 409, ms: 12, workspace: 'ws "quoted" \\ é \u2028 \u00ff' },
  ];
  const withoutTime = (line: string) => line.replace(/,"time":"[^"]*"/, '');
  for (const fields of cases) {
    logger.info({ ...fields }, 'request');
    logAccess(logger, fields);
    const [byPino, byHand] = lines.splice(0, 2);
    expect(withoutTime(byHand!)).toBe(withoutTime(byPino!));
    expect(JSON.parse(byHand!)).toMatchObject({ level: 30, msg: 'request', service: 'build-api' });
  }
  // Below info, nothing is written.
  logAccess(createLogger('warn', sink), cases[0]!);
  expect(lines).toEqual([]);
});
