// What the email and WhatsApp channels need of the store, on both adapters: a message is recorded
// once per (agent, channel, direction, dedupe key), and a received one that starts a run is recorded
// in the run's acceptance (a repeat starts nothing and names the first run; its sender's rate is
// counted there, past the limit nothing is written); the outbox is claimed by one claimer at a time
// and an attempt ends only while it is the latest; reported statuses only move forward; the list
// pages newest first; prune keeps queued messages; one agent per WhatsApp connection.
import { uuidV7 } from '../../src/ids';
import type { ChannelMessageRow, ReceivedMessage, SenderRate } from '../../src/store/port';
import { adapters, useStore, type Store } from './adapters';
import { agent, createAgent, newRun, now, ok, opts, range, unique, workspace, CREATOR, WRITER } from './fixtures';

const message = (ws: string, agentId: string, more: Partial<ChannelMessageRow> = {}): ChannelMessageRow => ({
  id: uuidV7(),
  workspaceId: ws,
  agentId,
  channel: 'whatsapp',
  direction: 'received',
  status: 'received',
  reason: null,
  from: '+15550001',
  to: ['+15559999'],
  subject: null,
  preview: 'hello',
  messageId: null,
  dedupeKey: unique('wamid'),
  contact: '+15550001',
  runId: null,
  createdAt: now(),
  sentAt: null,
  error: null,
  payload: null,
  attempts: 0,
  nextAttemptMs: 0,
  ...more,
});

/** A message to send, queued and due at `dueMs`. */
const outgoing = (ws: string, agentId: string, dueMs: number, more: Partial<ChannelMessageRow> = {}): ChannelMessageRow =>
  message(ws, agentId, { direction: 'sent', status: 'queued', payload: '{"text":"hi"}', nextAttemptMs: dueMs, ...more });

/** A run started by a received message (and counted against its sender's rate, when given). */
const started = (ws: string, received: ChannelMessageRow, senderRate?: SenderRate) =>
  newRun(unique('run'), {
    workspaceId: ws,
    kind: 'agent',
    source: 'whatsapp',
    targetId: received.agentId,
    message: received as ReceivedMessage,
    ...(senderRate ? { senderRate } : {}),
  });

const accept = (store: Store, run: ReturnType<typeof started>) => store.runs.accept(run, (b) => `only ${b}`);

describe.each(adapters)('$name: channel messages', (adapter) => {
  const { store, opened } = useStore(adapter);

  test('a message is recorded once per key: a second record writes nothing and returns the first', async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const first = message(ws, agentId, { status: 'suppressed', reason: 'an auto-reply', to: ['a', 'b'], subject: 'Re: x' });
    expect(await store.channelMessages.record(first)).toEqual({ recorded: true });
    expect(await store.channelMessages.record({ ...first, id: uuidV7(), preview: 'other' })).toEqual({ recorded: false, existing: first });
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', first.dedupeKey)).toEqual(first);
    // The key is per agent, channel and direction.
    for (const other of [{ agentId: unique('agent') }, { channel: 'email' as const }, { direction: 'sent' as const }]) {
      expect(await store.channelMessages.record({ ...first, id: uuidV7(), ...other })).toEqual({ recorded: true });
    }
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', 'no-such-key')).toBeNull();
  });

  test('a message that starts a run is recorded with it; a repeat (even concurrent, on two stores) starts nothing and names the first run', async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const received = message(ws, agentId);
    const first = started(ws, received);
    expect(await accept(store, first)).toEqual({ status: 'queued', claimed: false });
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', received.dedupeKey)).toEqual({ ...received, runId: first.id });
    const repeat = started(ws, { ...received, id: uuidV7() });
    expect(await accept(store, repeat)).toEqual({ status: 'repeated', runId: first.id, httpStatus: 0 });
    expect(await store.runs.find(repeat.id)).toBeNull();
    expect(await store.workspaces.credits(ws, 0)).toBe(999); // charged once

    const other = await opened.another();
    const raced = message(ws, agentId);
    const runs = range(12).map(() => started(ws, { ...raced, id: uuidV7() }));
    const outcomes = await Promise.all(runs.map((run, i) => accept(i % 2 === 0 ? store : other, run)));
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(1);
    const winner = runs[outcomes.findIndex((o) => o.status === 'queued')]!.id;
    for (const o of outcomes) if (o.status !== 'queued') expect(o).toEqual({ status: 'repeated', runId: winner, httpStatus: 0 });
    for (const run of runs) expect((await store.runs.find(run.id))?.status ?? null).toBe(run.id === winner ? 'queued' : null);
    expect((await store.channelMessages.find(agentId, 'whatsapp', 'received', raced.dedupeKey))?.runId).toBe(winner);
  });

  test('a suppressed message repeated as a run: the repeat names no run', async () => {
    const ws = workspace();
    const suppressed = message(ws, unique('agent'), { status: 'suppressed', reason: 'a loop' });
    await store.channelMessages.record(suppressed);
    const run = started(ws, { ...suppressed, id: uuidV7(), status: 'received', reason: null });
    expect(await accept(store, run)).toEqual({ status: 'repeated', runId: null, httpStatus: 0 });
    expect(await store.runs.find(run.id)).toBeNull();
  });

  test("a sender's rate: past the limit nothing is written, the message included; another sender or window counts apart", async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const rate = { window: 1000, limit: 2 };
    for (const _ of range(2)) expect((await accept(store, started(ws, message(ws, agentId), rate))).status).toBe('queued');
    const over = message(ws, agentId);
    const refused = started(ws, over, rate);
    expect(await accept(store, refused)).toEqual({ status: 'rate_limited' });
    expect(await store.runs.find(refused.id)).toBeNull();
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', over.dedupeKey)).toBeNull();
    expect(await store.workspaces.credits(ws, 0)).toBe(998);
    expect((await accept(store, started(ws, message(ws, agentId, { contact: '+15550002' }), rate))).status).toBe('queued');
    expect((await accept(store, started(ws, over, { ...rate, window: 1001 }))).status).toBe('queued');
    // A repeat is never counted (nor refused for the rate).
    expect((await accept(store, started(ws, { ...over, id: uuidV7() }, { ...rate, window: 1001, limit: 1 }))).status).toBe('repeated');
    // The agent's suppressed messages count apart from every sender's.
    expect(await store.channelMessages.countSuppressed(agentId, 'whatsapp', rate)).toBe(true);
    expect(await store.channelMessages.countSuppressed(agentId, 'whatsapp', rate)).toBe(true);
    expect(await store.channelMessages.countSuppressed(agentId, 'whatsapp', rate)).toBe(false);
    expect(await store.channelMessages.countSuppressed(agentId, 'email', rate)).toBe(true);
    expect(await store.channelMessages.countSuppressed(agentId, 'whatsapp', { ...rate, window: 1001 })).toBe(true);
  });

  test('the outbox: concurrent claims (two stores) take disjoint messages, each attempt counted; a lost claim ends and renews nothing', async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const due = Date.now() + 1_000_000_000; // past any other case's messages
    const queued = range(10).map(() => outgoing(ws, agentId, due));
    for (const m of queued) expect(await store.channelMessages.record(m)).toEqual({ recorded: true });
    expect((await store.channelMessages.claimDue(due - 1, due + 10, 100)).filter((m) => m.agentId === agentId)).toEqual([]);
    const other = await opened.another();
    const claims = await Promise.all([store, other, store, other].map((s) => s.channelMessages.claimDue(due, due + 60_000, 100)));
    const mine = claims.flat().filter((m) => m.agentId === agentId);
    expect(mine.map((m) => m.id).sort()).toEqual(queued.map((m) => m.id).sort());
    for (const m of mine) expect(m).toMatchObject({ status: 'queued', attempts: 1, nextAttemptMs: due + 60_000 });
    // Leased: due again only once the lease has passed, as attempt 2.
    expect((await store.channelMessages.claimDue(due + 59_999, due + 70_000, 100)).filter((m) => m.agentId === agentId)).toEqual([]);
    const [a, b, c] = queued.map((m) => m.id) as [string, string, string];
    const again = (await store.channelMessages.claimDue(due + 60_000, due + 120_000, 100)).filter((m) => m.agentId === agentId);
    expect(again).toHaveLength(10);
    expect(again.every((m) => m.attempts === 2)).toBe(true);
    // A send that outlasts its lease renews it; the attempt that lost its claim cannot.
    const d = queued[3]!.id;
    expect(await store.channelMessages.renewClaim(d, 1, due + 180_000)).toBe(false);
    expect(await store.channelMessages.renewClaim(d, 2, due + 180_000)).toBe(true);
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'sent', queued[3]!.dedupeKey)).toMatchObject({ attempts: 2, nextAttemptMs: due + 180_000 });
    const sentAt = now();
    expect(await store.channelMessages.finishSend(a, 1, { status: 'sent', sentAt, messageId: 'wamid.lost' })).toBe(false);
    expect(await store.channelMessages.finishSend(a, 2, { status: 'sent', sentAt, messageId: 'wamid.a' })).toBe(true);
    expect(await store.channelMessages.finishSend(a, 2, { status: 'failed', error: 'late' })).toBe(false);
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'sent', queued[0]!.dedupeKey)).toMatchObject({
      status: 'sent',
      sentAt,
      messageId: 'wamid.a',
      error: null,
      payload: null,
    });
    expect(await store.channelMessages.sentMessageId('whatsapp', 'wamid.a')).toBe(true);
    expect(await store.channelMessages.sentMessageId('email', 'wamid.a')).toBe(false);
    expect(await store.channelMessages.finishSend(b, 2, { status: 'failed', error: 'refused by the relay' })).toBe(true);
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'sent', queued[1]!.dedupeKey)).toMatchObject({
      status: 'failed',
      error: 'refused by the relay',
      payload: null,
    });
    expect(await store.channelMessages.finishSend(c, 2, { status: 'queued', error: 'timed out', nextAttemptMs: due + 200_000 })).toBe(true);
    const retried = (await store.channelMessages.claimDue(due + 200_000, due + 300_000, 100)).filter((m) => m.id === c);
    expect(retried).toEqual([expect.objectContaining({ attempts: 3, error: 'timed out', payload: '{"text":"hi"}' })]);
  });

  test("reported statuses only move forward; failed always applies; an unknown id, or another workspace's report, matches nothing", async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const sent = outgoing(ws, agentId, 0, { status: 'sent', messageId: unique('wamid'), payload: null });
    await store.channelMessages.record(sent);
    const status = async () => (await store.channelMessages.find(agentId, 'whatsapp', 'sent', sent.dedupeKey))?.status;
    expect(await store.channelMessages.reportStatus(sent.workspaceId, 'whatsapp', sent.messageId!, 'read', null)).toBe(true);
    expect(await store.channelMessages.reportStatus(sent.workspaceId, 'whatsapp', sent.messageId!, 'delivered', null)).toBe(true);
    expect(await status()).toBe('read');
    expect(await store.channelMessages.reportStatus(sent.workspaceId, 'whatsapp', sent.messageId!, 'failed', 'undeliverable')).toBe(true);
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'sent', sent.dedupeKey)).toMatchObject({ status: 'failed', error: 'undeliverable' });
    expect(await store.channelMessages.reportStatus(sent.workspaceId, 'whatsapp', 'wamid.unknown', 'delivered', null)).toBe(false);
    expect(await store.channelMessages.reportStatus(sent.workspaceId, 'email', sent.messageId!, 'delivered', null)).toBe(false);
    // Another workspace's report of the same id (its own connection, its own app secret) touches nothing here.
    expect(await store.channelMessages.reportStatus(workspace(), 'whatsapp', sent.messageId!, 'read', null)).toBe(false);
    expect(await status()).toBe('failed');
  });

  test("the list pages an agent's messages newest first, of one channel or both; lastReceivedAt is the contact's latest", async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const base = Date.now();
    const rows = range(5).map((i) =>
      message(ws, agentId, { id: uuidV7(base + i), channel: i % 2 ? 'email' : 'whatsapp', createdAt: new Date(base + i).toISOString() }),
    );
    for (const m of rows) await store.channelMessages.record(m);
    await store.channelMessages.record(message(ws, unique('agent')));
    const newest = [...rows].reverse();
    const page = await store.channelMessages.list({ workspaceId: ws, agentId, limit: 2 });
    expect(page).toEqual(newest.slice(0, 2));
    expect(await store.channelMessages.list({ workspaceId: ws, agentId, limit: 10, beforeId: page[1]!.id })).toEqual(newest.slice(2));
    expect(await store.channelMessages.list({ workspaceId: ws, agentId, limit: 10, channel: 'email' })).toEqual(newest.filter((m) => m.channel === 'email'));
    const emails = newest.filter((m) => m.channel === 'email');
    expect(await store.channelMessages.list({ workspaceId: ws, agentId, limit: 10, channel: 'email', beforeId: emails[0]!.id })).toEqual(emails.slice(1));
    expect(await store.channelMessages.list({ workspaceId: workspace(), agentId, limit: 10 })).toEqual([]);
    expect(await store.channelMessages.lastReceivedAt(agentId, 'whatsapp', '+15550001')).toBe(newest.find((m) => m.channel === 'whatsapp')!.createdAt);
    expect(await store.channelMessages.lastReceivedAt(agentId, 'email', '+15550001')).toBe(emails[0]!.createdAt);
    expect(await store.channelMessages.lastReceivedAt(agentId, 'whatsapp', '+15550009')).toBeNull();
  });

  test("prune deletes old messages that are no longer queued, a batch at a time, and the senders' ended windows", async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const old = '2001-01-01T00:00:00.000Z';
    const gone = range(3).map(() => message(ws, agentId, { createdAt: old }));
    const queued = outgoing(ws, agentId, Date.now() + 2_000_000_000, { createdAt: old });
    const recent = message(ws, agentId);
    for (const m of [...gone, queued, recent]) await store.channelMessages.record(m);
    // A sender at its limit in window 5; the windows before 6 pruned, it may send again in window 5.
    const rate = { window: 5, limit: 1 };
    expect((await accept(store, started(ws, message(ws, agentId, { contact: 'pruned' }), rate))).status).toBe('queued');
    expect((await accept(store, started(ws, message(ws, agentId, { contact: 'pruned' }), rate))).status).toBe('rate_limited');
    const before = '2001-01-02T00:00:00.000Z';
    let pruned = 0;
    for (let n = await store.channelMessages.prune(before, 2, 6); n > 0; n = await store.channelMessages.prune(before, 2, 6)) {
      expect(n).toBeLessThanOrEqual(2);
      pruned += n;
    }
    expect(pruned).toBeGreaterThanOrEqual(3); // other cases' old messages too, if any
    for (const m of gone) expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', m.dedupeKey)).toBeNull();
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'sent', queued.dedupeKey)).not.toBeNull();
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', recent.dedupeKey)).not.toBeNull();
    expect((await accept(store, started(ws, message(ws, agentId, { contact: 'pruned' }), rate))).status).toBe('queued');
  });

  test('one agent per WhatsApp connection: a second binding fails whole (channel_taken) until the first lets go', async () => {
    const ws = workspace();
    const whatsapp = (connection: string, enabled = true) => ({ whatsapp: { enabled, connection } });
    const first = await createAgent(store, ws, agent(unique('first'), whatsapp('wa:1')));
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:1')).toBe(first.id);
    expect(await store.channelMessages.boundAgent(workspace(), 'whatsapp', 'wa:1')).toBeNull();
    const taken = { ok: false, reason: 'channel_taken', channel: 'whatsapp', address: 'wa:1', agentId: first.id };

    const secondDoc = agent(unique('second'), whatsapp('wa:1'));
    expect(await store.agents.create(ws, secondDoc.id, secondDoc, opts(), [], CREATOR)).toEqual(taken);
    expect(await store.agents.find(ws, secondDoc.id)).toBeNull();
    // Disabled, or on another connection, it may be created; enabling the taken one fails whole.
    const second = await createAgent(store, ws, agent(unique('second'), whatsapp('wa:1', false)));
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:1')).toBe(first.id);
    const enabled = { ...second.document, description: 'changed', ...whatsapp('wa:1') };
    expect(await store.agents.replace(ws, second.id, second.stampMicros, enabled, [], WRITER)).toEqual(taken);
    expect((await store.agents.find(ws, second.id))?.stampMicros).toBe(second.stampMicros);
    expect((await store.agents.find(ws, second.id))?.document.description).toBe(second.document.description);
    const moved = await ok(store.agents.replace(ws, second.id, second.stampMicros, { ...second.document, ...whatsapp('wa:2') }, [], WRITER));
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:2')).toBe(second.id);
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:1')).toBe(first.id);

    // The first lets go (disabled): the second binds it, and no longer holds its old one.
    await ok(store.agents.replace(ws, first.id, first.stampMicros, { ...first.document, ...whatsapp('wa:1', false) }, [], WRITER));
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:1')).toBeNull();
    await ok(store.agents.replace(ws, second.id, moved.stampMicros, { ...moved.document, ...whatsapp('wa:1') }, [], WRITER));
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:1')).toBe(second.id);
    expect(await store.channelMessages.boundAgent(ws, 'whatsapp', 'wa:2')).toBeNull();
    // Another workspace's agent may bind the same connection name.
    const elsewhere = workspace();
    const third = await createAgent(store, elsewhere, agent(unique('third'), whatsapp('wa:1')));
    expect(await store.channelMessages.boundAgent(elsewhere, 'whatsapp', 'wa:1')).toBe(third.id);
  });

  test('agents created at once (two stores) with one connection: one binds it, the others are channel_taken and not written', async () => {
    const ws = workspace();
    const other = await opened.another();
    const docs = range(6).map(() => agent(unique('racer'), { whatsapp: { enabled: true, connection: 'wa:raced' } }));
    const outcomes = await Promise.all(docs.map((doc, i) => (i % 2 === 0 ? store : other).agents.create(ws, doc.id, doc, opts(), [], CREATOR)));
    const winners = docs.filter((_doc, i) => outcomes[i]!.ok);
    expect(winners).toHaveLength(1);
    for (const o of outcomes)
      if (!o.ok) expect(o).toEqual({ ok: false, reason: 'channel_taken', channel: 'whatsapp', address: 'wa:raced', agentId: winners[0]!.id });
    const fresh = await opened.another();
    for (const doc of docs) expect((await fresh.agents.find(ws, doc.id))?.id ?? null).toBe(doc === winners[0] ? doc.id : null);
    expect(await fresh.channelMessages.boundAgent(ws, 'whatsapp', 'wa:raced')).toBe(winners[0]!.id);
  });

  test('texts with U+0000 (which PostgreSQL cannot hold) are kept as U+FFFD on both stores, and found by the same key', async () => {
    const ws = workspace();
    const agentId = unique('agent');
    const key = unique('nul\u0000key');
    const row = message(ws, agentId, { dedupeKey: key, preview: 'a\u0000b', from: 'x\u0000@example.org', to: ['y\u0000'] });
    expect(await store.channelMessages.record(row)).toEqual({ recorded: true });
    expect(await store.channelMessages.find(agentId, 'whatsapp', 'received', key)).toMatchObject({
      dedupeKey: key.replace('\u0000', '\uFFFD'),
      preview: 'a\uFFFDb',
      from: 'x\uFFFD@example.org',
      to: ['y\uFFFD'],
    });
    expect(await store.channelMessages.record({ ...row, id: uuidV7() })).toMatchObject({ recorded: false });
  });
});
