// The PostgreSQL adapter's listening connection, without a server: it keeps trying, and close()
// stops it. (What the replicas hear of each other, on a server: test/store/races.test.ts.)
import { listenForNotifications } from '../../src/store/postgres/notifications';

test('a listener that cannot connect keeps trying without crashing, and close() stops it', async () => {
  const n = listenForNotifications('postgres://nobody@127.0.0.1:1/none', { firstRetryMs: 10, maxRetryMs: 20 });
  let calls = 0;
  n.on('build_runs_queued', () => calls++);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await n.close();
  expect(calls).toBe(0);
});
