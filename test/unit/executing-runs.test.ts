// The registry of runs executing in this process: listed while their body runs, stoppable, awaited.
import { ExecutingRuns } from '../../src/runtime/runner/executing-runs';

function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

test('a run is listed while it executes, and a stop request reaches it and resolves at its end', async () => {
  const runs = new ExecutingRuns();
  const body = gate();
  const stops: string[] = [];
  const tracked = runs.track(
    'r1',
    () => stops.push('r1'),
    () => body.opened,
  );
  expect(runs.ids()).toEqual(['r1']);
  expect(runs.size).toBe(1);
  let ended = false;
  const stopped = runs.requestStop('r1')!.then(() => (ended = true));
  expect(stops).toEqual(['r1']);
  await new Promise((resolve) => setImmediate(resolve));
  expect(ended).toBe(false); // still executing
  body.open();
  await tracked;
  await stopped;
  expect(ended).toBe(true);
  expect(runs.ids()).toEqual([]);
  expect(runs.requestStop('r1')).toBeNull(); // no longer here
});

test('stop and stopAll reach only the runs executing; a body that throws still leaves the list', async () => {
  const runs = new ExecutingRuns();
  const stops: string[] = [];
  const a = gate();
  const b = gate();
  const ta = runs.track(
    'a',
    () => stops.push('a'),
    () => a.opened,
  );
  const tb = runs.track(
    'b',
    () => stops.push('b'),
    async () => {
      await b.opened;
      throw new Error('boom');
    },
  );
  runs.stop('a');
  runs.stop('nope');
  expect(stops).toEqual(['a']);
  runs.stopAll();
  expect(stops.sort()).toEqual(['a', 'a', 'b']);
  b.open();
  await expect(tb).rejects.toThrow('boom');
  expect(runs.ids()).toEqual(['a']);
  a.open();
  await ta;
  expect(runs.size).toBe(0);
});
