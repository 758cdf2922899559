// The hand-off queue: which runs wait in memory, and when the workers must look in the database.
import { HandOffQueue } from '../../src/runtime/runner/hand-off-queue';
import type { QueuedRun } from '../../src/runtime/runner';

const run = (id: string) =>
  ({ id, kind: 'workflow', workspaceId: 'ws', snapshot: null, request: null, state: null, creditsReserved: 1, creditsSpent: 0 }) as QueuedRun;
const drain = (queue: HandOffQueue) => {
  const taken: string[] = [];
  for (let next = queue.take(); next; next = queue.take()) taken.push(next.id);
  return taken;
};

test('runs are handed over oldest first up to the limit; beyond it they wait in the database', () => {
  const queue = new HandOffQueue(2);
  expect(queue.startLook()).toBeNull();
  for (const id of ['a', 'b', 'c']) queue.add(run(id));
  expect(queue.handedOver).toBe(2);
  expect(queue.unaccounted).toBe(1);
  expect(drain(queue)).toEqual(['a', 'b']);
  expect(queue.handedOver).toBe(0);
});

test('once the database holds runs not handed over, newer runs wait there too (the backlog goes first)', () => {
  const queue = new HandOffQueue(8);
  queue.add(); // a run this process was not given: it is in the table
  queue.add(run('newer'));
  expect(queue.handedOver).toBe(0);
  expect(queue.unaccounted).toBe(2);
  // A look found the table empty: the backlog is gone, runs are handed over again.
  queue.foundNone(queue.startLook()!, 0);
  expect(queue.unaccounted).toBe(0);
  expect(queue.startLook()).toBeNull();
  queue.add(run('latest'));
  expect(drain(queue)).toEqual(['latest']);
});

test('looks are rationed: one under way per run counted; a claim accounts for one run', () => {
  const queue = new HandOffQueue(8);
  queue.add();
  expect(queue.startLook()).not.toBeNull();
  expect(queue.startLook()).toBeNull(); // the one run counted is being looked for
  queue.add();
  expect(queue.startLook()).not.toBeNull();
  expect(queue.startLook()).toBeNull();
  queue.found();
  queue.found();
  expect(queue.unaccounted).toBe(0);
  expect(queue.startLook()).toBeNull();
});

test('a look that found nothing does not forget a run counted while it looked', () => {
  const queue = new HandOffQueue(8);
  queue.add();
  const look = queue.startLook()!;
  queue.add(); // queued during the look: perhaps after what it saw
  queue.foundNone(look, 0);
  expect(queue.unaccounted).toBe(1);
  expect(queue.startLook()).not.toBeNull();
});

test('a failed look accounts for nothing', () => {
  const queue = new HandOffQueue(8);
  queue.add();
  expect(queue.startLook()).not.toBeNull();
  queue.lookFailed();
  expect(queue.unaccounted).toBe(1);
  expect(queue.startLook()).not.toBeNull();
});

test('a run refused for its workspace cap makes every later end send the workers to the table, until nothing is left there', () => {
  const queue = new HandOffQueue(8);
  queue.runEnded();
  expect(queue.unaccounted).toBe(0); // nothing deferred: an end changes nothing
  queue.claimRefused();
  queue.runEnded();
  expect(queue.unaccounted).toBe(1);
  // Nothing claimable, but runs still execute here: their ends may free the cap, so the deferral stays.
  queue.foundNone(queue.startLook()!, 1);
  queue.runEnded();
  expect(queue.unaccounted).toBe(1);
  // Nothing claimable and nothing executing here: no end of ours will free a cap.
  queue.foundNone(queue.startLook()!, 0);
  queue.runEnded();
  expect(queue.unaccounted).toBe(0);
});

test('in a declared backlog a claim accounts for no run; a look begun after the declaration that finds none ends it', () => {
  const queue = new HandOffQueue(8);
  queue.declareBacklog(2);
  expect(queue.inBacklog).toBe(true);
  const first = queue.startLook()!;
  expect(queue.startLook()).not.toBeNull();
  expect(queue.startLook()).toBeNull(); // as many looks as declared
  queue.found();
  queue.found();
  expect(queue.unaccounted).toBe(2); // the backlog has no count: both workers look again
  queue.add(run('newer')); // a run accepted meanwhile waits behind the backlog, in the table
  expect(queue.handedOver).toBe(0);
  expect(first.countedBefore).toBe(2);
  queue.foundNone(queue.startLook()!, 1);
  expect(queue.inBacklog).toBe(false);
  // Runs executing here may free a workspace's cap for what is left: their ends bring looks.
  expect(queue.unaccounted).toBe(0);
  queue.runEnded();
  expect(queue.unaccounted).toBe(1);
});

test('a look begun before a backlog was declared does not end it', () => {
  const queue = new HandOffQueue(8);
  queue.add();
  const early = queue.startLook()!;
  queue.declareBacklog(1);
  queue.foundNone(early, 0);
  expect(queue.inBacklog).toBe(true);
  expect(queue.startLook()).not.toBeNull();
});
