// The event outbox across kills (issue 49): a server under a load of agent creates, delivering
// their `agent.created` events to a slow receiver, is killed with SIGKILL again and again and
// started again on the same database. Every create it acknowledged reaches the receiver, signed
// (verified with the `standardwebhooks` library), and so does every create that committed unanswered;
// nothing reaches it for a create that did not
// commit; another workspace's receiver sees only its own; a repeat keeps its webhook-id.
import { startEventReceiver, type EventReceiver } from '../helpers/event-receiver';
import { minimalAgent } from '../helpers/fixtures';
import { storedRows } from '../helpers/stored';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(300_000);

const KILLS = Number(process.env.EVENT_CRASH_KILLS ?? 5);
const CLIENTS = 4;

let s: ServerProcess;
let mine: EventReceiver;
let theirs: EventReceiver;

beforeAll(async () => {
  [mine, theirs] = await Promise.all([startEventReceiver(), startEventReceiver()]);
  // Slow enough that kills land between a commit and its delivery's record.
  mine.respond = async () => {
    await new Promise((r) => setTimeout(r, 150));
    return { status: 200 };
  };
  s = await startServer({ HTTP_TOOL_ALLOW_PRIVATE: '1', EVENT_DELIVERY_TIMEOUT_SECONDS: '2', EVENT_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1,1,1,1,1' });
  for (const [workspace, receiver] of [
    ['crash-events', mine],
    ['bystander', theirs],
  ] as const) {
    const res = await s
      .client(s.token({ workspace }))
      .PUT('/api/build/event-endpoints', { body: { url: receiver.url, event_types: ['agent.created'], description: null } });
    expect(res.response.status).toBe(201);
    receiver.secrets.push(res.data!.data.secret);
  }
});
afterAll(async () => {
  await s.dispose();
  await Promise.all([mine.close(), theirs.close()]);
});

let serial = 0;

async function creating(alive: () => boolean, acked: Set<string>, token: string, prefix: string): Promise<void> {
  const api = s.client(token);
  while (alive()) {
    const slug = `${prefix}-${++serial}`;
    try {
      const res = await api.PUT('/api/build/agents', { body: { ...minimalAgent(slug), slug } });
      if (res.response.status === 201) acked.add(slug);
    } catch (err) {
      if (alive()) throw err;
      return; // the server died under this create: it may or may not have committed
    }
  }
}

test(`${KILLS} SIGKILLs between commits and deliveries: every committed event arrives signed, none of an uncommitted write, none across workspaces`, async () => {
  const acked = new Set<string>();
  const bystanders = new Set<string>();
  const token = s.token({ workspace: 'crash-events' });
  for (let kill = 1; kill <= KILLS; kill++) {
    let alive = true;
    const clients = Array.from({ length: CLIENTS }, () => creating(() => alive, acked, token, 'crash'));
    const bystander = creating(() => alive, bystanders, s.token({ workspace: 'bystander' }), 'quiet');
    await new Promise((resolve) => setTimeout(resolve, 300 + 100 * kill));
    alive = false;
    await s.kill('SIGKILL');
    await Promise.all([...clients, bystander]);
    await s.restart();
  }
  const slugOf = (e: { event: { data: Record<string, unknown> } }) => e.event.data.slug as string;
  const committed = new Set((await storedRows<{ slug: string }>(s, 'SELECT slug FROM agents WHERE workspace_id = ?', ['crash-events'])).map((r) => r.slug));
  expect([...acked].filter((slug) => !committed.has(slug))).toEqual([]);
  // Every committed create's event arrives, acknowledged or not.
  await mine.waitFor((got) => [...committed].every((slug) => got.some((e) => slugOf(e) === slug)), 120_000);
  expect(mine.received.filter((e) => !committed.has(slugOf(e)))).toEqual([]);
  expect(mine.received.every((e) => e.verifiedWith[0] === true)).toBe(true);
  // A repeat (an attempt whose record the kill cut off) is the same event: one webhook-id per agent.
  const idsBySlug = new Map<string, Set<string>>();
  for (const e of mine.received) idsBySlug.set(slugOf(e), (idsBySlug.get(slugOf(e)) ?? new Set()).add(e.id));
  expect([...idsBySlug.values()].every((ids) => ids.size === 1)).toBe(true);
  expect(theirs.received.every((e) => slugOf(e).startsWith('quiet-'))).toBe(true);
  const repeats = mine.received.length - idsBySlug.size;
  process.stdout.write(
    `event crash: ${KILLS} kills, ${acked.size} acknowledged, ${committed.size} committed, ${mine.received.length} received (${repeats} repeats)\n`,
  );
});
