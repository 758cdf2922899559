// The event subscriptions' settings: their defaults, their bounds, and the retry schedule's form.
import { ConfigError } from '../../src/config-values';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, eventConfig } from '../../src/event-config';

test('defaults: 32 attempts at once, 4 per endpoint, every 100 ms, the Standard Webhooks schedule', () => {
  expect(eventConfig({})).toMatchObject({
    concurrency: 32,
    perEndpoint: 4,
    pollMs: 100,
    timeoutMs: 10_000,
    retryScheduleMs: DEFAULT_RETRY_SCHEDULE_SECONDS.map((s) => s * 1000),
  });
});

test('EVENT_DELIVERY_CONCURRENCY=0: a process that sends none; below 0 or past 1000 is refused, naming the setting', () => {
  expect(eventConfig({ EVENT_DELIVERY_CONCURRENCY: '0' }).concurrency).toBe(0);
  expect(() => eventConfig({ EVENT_DELIVERY_CONCURRENCY: '-1' })).toThrow(new ConfigError("EVENT_DELIVERY_CONCURRENCY: must be a whole number, got '-1'"));
  expect(() => eventConfig({ EVENT_DELIVERY_CONCURRENCY: '1001' })).toThrow(/^EVENT_DELIVERY_CONCURRENCY: must be between 0 and 1000/);
  expect(() => eventConfig({ EVENT_DELIVERIES_PER_ENDPOINT: '0' })).toThrow(/^EVENT_DELIVERIES_PER_ENDPOINT: must be between 1 and 100/);
});

test('EVENT_RETRY_SCHEDULE_SECONDS: whole seconds, comma-separated; empty is no retry; anything else is refused', () => {
  expect(eventConfig({ EVENT_RETRY_SCHEDULE_SECONDS: '1, 2,3' }).retryScheduleMs).toEqual([1000, 2000, 3000]);
  expect(eventConfig({ EVENT_RETRY_SCHEDULE_SECONDS: '' }).retryScheduleMs).toEqual([]);
  for (const bad of ['1,,2', '5s', '604801', Array.from({ length: 21 }, () => '1').join(',')]) {
    expect(() => eventConfig({ EVENT_RETRY_SCHEDULE_SECONDS: bad })).toThrow(/^EVENT_RETRY_SCHEDULE_SECONDS: must be whole seconds/);
  }
});
