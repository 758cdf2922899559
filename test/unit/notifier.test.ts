// The notifier batches what arrives while a send is in flight into the next one, sends a repeat
// once, and goes on after a failed send (its notifications are hints: the readers poll).
import { Notifier } from '../../src/store/postgres/notifier';

test('one send at a time: what arrives meanwhile goes in the next, a pending repeat once; a failed send does not stop the next', async () => {
  const sent: [string[], string[]][] = [];
  const inFlight: (() => void)[] = [];
  let fail = false;
  const notifier = new Notifier(async (channels, payloads) => {
    sent.push([channels, payloads]);
    await new Promise<void>((resolve) => inFlight.push(resolve));
    if (fail) throw new Error('connection lost');
  });
  notifier.notify('events', 'a:1');
  expect(sent).toEqual([[['events'], ['a:1']]]); // at once: nothing was in flight
  notifier.notify('events', 'a:2');
  notifier.notify('queued', 'a');
  notifier.notify('events', 'a:2');
  expect(sent).toHaveLength(1); // waits for the first
  fail = true;
  inFlight.shift()!();
  await new Promise((resolve) => setImmediate(resolve));
  expect(sent[1]).toEqual([
    ['events', 'queued'],
    ['a:2', 'a'],
  ]);
  inFlight.shift()!(); // this one fails
  await new Promise((resolve) => setImmediate(resolve));
  fail = false;
  notifier.notify('events', 'a:3');
  expect(sent[2]).toEqual([['events'], ['a:3']]);
  inFlight.shift()!();
});
