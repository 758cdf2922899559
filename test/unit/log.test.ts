import { Writable } from 'node:stream';
import { createLogger, loggablePath } from '../../src/log';

test('a logged path has no query string, and a webhook path has its secret masked', () => {
  expect(loggablePath('/api/build/agents/a?access_token=secret')).toBe('/api/build/agents/a');
  expect(loggablePath('/hooks/3f2a/whk_secret?x=1')).toBe('/hooks/3f2a/[redacted]');
  expect(loggablePath('/hooks/3f2a/whk_secret/more')).toBe('/hooks/3f2a/[redacted]/more');
  expect(loggablePath('/healthz')).toBe('/healthz');
});

test('log lines carry an ISO 8601 UTC time of when they were written', async () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
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
