// Event streams are bounded: a stream of a run that ended, asked for after its final event, is
// answered 204 at once (it heartbeated forever); past the last event of a run still going, it
// resumes after that event and ends with the run; and each caller holds at most
// EVENT_STREAMS_PER_CALLER streams open on a server (429 with Retry-After beyond), each slot given
// back when its stream ends or its client leaves.
import http from 'node:http';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun } from '../helpers/runs';
import { readEventStream } from '../helpers/events';

let t: TestService;
beforeAll(async () => {
  t = await startService({ EVENT_STREAMS_PER_CALLER: '3', EVENTS_HEARTBEAT_SECONDS: '1' });
  const res = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent('Streamed'), slug: 'streamed', max_steps: 5, tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'write' } },
  });
  expect(res.response.status).toBe(201);
});
afterAll(() => t.close());

async function start(prompt: string, token?: string): Promise<string> {
  const res = await t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: 'streamed' } }, body: { prompt } });
  expect(res.response.status).toBe(202);
  return res.data!.data.run_id;
}
const eventsUrl = (runId: string) => `${t.baseUrl}/api/build/runs/${runId}/events`;
const parked = async (token?: string) => {
  const runId = await start('/call kv.set {"key":"k","value":1}', token);
  expect((await waitForAgentRun(t, runId, token)).status).toBe('awaiting_approval');
  return runId;
};

/** Opens a stream and keeps it open; resolves with its status once the headers arrive. */
function open(url: string, token: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: () => Promise<string>; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      const ended = new Promise<string>((done) => res.on('end', () => done(text)));
      resolve({ status: res.statusCode!, headers: res.headers, body: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

describe('a stream past the end', () => {
  test('of a finished run, at or past its final event: 204 at once, no body; before it: the rest, then the end', async () => {
    const runId = await start('hello');
    await waitForAgentRun(t, runId);
    const all = await readEventStream(eventsUrl(runId), t.token(), { forMs: 5000 });
    const final = all.events[all.events.length - 1]!;
    expect([all.status, all.ended, final.event]).toEqual([200, true, 'run.finished']);

    for (const lastEventId of [final.id, final.id + 1, 999_999_999]) {
      const started = performance.now();
      const past = await readEventStream(eventsUrl(runId), t.token(), { lastEventId, forMs: 5000 });
      expect([lastEventId, past.status, past.events, past.ended]).toEqual([lastEventId, 204, [], true]);
      expect(performance.now() - started).toBeLessThan(2000); // not held open until the client gives up
    }
    const rest = await readEventStream(eventsUrl(runId), t.token(), { lastEventId: final.id - 1, forMs: 5000 });
    expect([rest.status, rest.events.map((e) => e.id), rest.ended]).toEqual([200, [final.id], true]);
  });

  test('of a run still going: it resumes after the last stored event and ends with the run', async () => {
    const runId = await parked();
    const stored = await readEventStream(eventsUrl(runId), t.token(), { stopAfter: 100, forMs: 1500 });
    const last = stored.events[stored.events.length - 1]!.id;
    const following = readEventStream(eventsUrl(runId), t.token(), { lastEventId: last + 50, forMs: 10_000 });
    await new Promise((r) => setTimeout(r, 300));
    const decided = await t
      .client()
      .POST('/api/build/runs/{runId}/approvals/{callId}', { params: { path: { runId, callId: 'call_1' } }, body: { decision: 'approve' } });
    expect(decided.response.status).toBe(200);
    const read = await following;
    expect(read.ended).toBe(true);
    expect(read.events[0]!.id).toBe(last + 1);
    expect(read.events[read.events.length - 1]!.event).toBe('run.finished');
  });
});

describe('streams per caller', () => {
  test('the fourth open stream of one caller is 429 with Retry-After; another caller is not limited by it; a closed stream frees its slot', async () => {
    const token = t.token({ user: 'streamer' });
    const runId = await parked(token);
    const streams = await Promise.all([1, 2, 3].map(() => open(eventsUrl(runId), token)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200]);

    const refused = await fetch(eventsUrl(runId), { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(await refused.json()).toEqual({
      error: '3 event streams are open for this caller already, the limit (EVENT_STREAMS_PER_CALLER); close one or retry after 10 s',
    });

    // Another user of the workspace (a run another user started is 404 to them, so their own run).
    const other = t.token({ user: 'someone-else' });
    const theirs = await open(eventsUrl(await parked(other)), other);
    expect(theirs.status).toBe(200);
    theirs.close();

    streams[0]!.close();
    let reopened = 0;
    for (let i = 0; i < 50 && reopened !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20)); // the server sees the close a moment later
      const again = await open(eventsUrl(runId), token);
      reopened = again.status;
      if (again.status === 200) streams.push(again);
      else again.close();
    }
    expect(reopened).toBe(200);
    for (const s of streams) s.close();
  });

  test('streams that end (their run ended) give their slots back: many in a row are served', async () => {
    const token = t.token({ user: 'sequential' });
    const runId = await start('hello', token);
    await waitForAgentRun(t, runId, token);
    for (let i = 0; i < 8; i++) {
      const read = await readEventStream(eventsUrl(runId), token, { forMs: 5000 });
      expect([i, read.status, read.ended]).toEqual([i, 200, true]);
    }
  });
});
