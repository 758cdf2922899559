// Meta's webhook subscription check (src/channels/whatsapp/verification.ts): the challenge is
// echoed only for hub.mode=subscribe with a configured verify token and a short printable challenge.
import { answerVerification } from '../../src/channels/whatsapp/verification';

const tokens = ['first-token', 'second-token'];

test('subscribe with a configured token echoes the challenge', () => {
  expect(answerVerification({ mode: 'subscribe', token: 'first-token', challenge: '1158201444' }, tokens)).toEqual({ ok: true, challenge: '1158201444' });
  expect(answerVerification({ mode: 'subscribe', token: 'second-token', challenge: 'abc-XYZ_09 ~' }, tokens)).toEqual({ ok: true, challenge: 'abc-XYZ_09 ~' });
});

test('another mode, or none, is refused', () => {
  expect(answerVerification({ mode: 'unsubscribe', token: 'first-token', challenge: '1' }, tokens)).toEqual({
    ok: false,
    reason: 'hub.mode: must be subscribe',
  });
  expect(answerVerification({ token: 'first-token', challenge: '1' }, tokens)).toEqual({ ok: false, reason: 'hub.mode: must be subscribe' });
});

test('a wrong, missing, longer or shorter token is refused without echoing it', () => {
  const mismatch = { ok: false, reason: 'hub.verify_token: does not match the verify token' };
  expect(answerVerification({ mode: 'subscribe', token: 'first-tokem', challenge: '1' }, tokens)).toEqual(mismatch);
  expect(answerVerification({ mode: 'subscribe', token: 'first-token-and-more', challenge: '1' }, tokens)).toEqual(mismatch);
  expect(answerVerification({ mode: 'subscribe', token: 'first', challenge: '1' }, tokens)).toEqual(mismatch);
  expect(answerVerification({ mode: 'subscribe', token: 'x'.repeat(10_000), challenge: '1' }, tokens)).toEqual(mismatch);
  expect(answerVerification({ mode: 'subscribe', challenge: '1' }, tokens)).toEqual({ ok: false, reason: 'hub.verify_token: required' });
  expect(answerVerification({ mode: 'subscribe', token: '', challenge: '1' }, tokens)).toEqual({ ok: false, reason: 'hub.verify_token: required' });
});

test('with no configured token (or only empty ones) nothing is accepted, the empty token included', () => {
  expect(answerVerification({ mode: 'subscribe', token: '', challenge: '1' }, [])).toMatchObject({
    ok: false,
    reason: expect.stringContaining('no verify token'),
  });
  expect(answerVerification({ mode: 'subscribe', token: 'x', challenge: '1' }, [''])).toMatchObject({
    ok: false,
    reason: expect.stringContaining('no verify token'),
  });
});

test('a missing, empty, over-long or non-printable challenge is refused', () => {
  const ask = (challenge: string | undefined) => answerVerification({ mode: 'subscribe', token: 'first-token', challenge }, tokens);
  expect(ask(undefined)).toEqual({ ok: false, reason: 'hub.challenge: required' });
  expect(ask('')).toEqual({ ok: false, reason: 'hub.challenge: required' });
  expect(ask('9'.repeat(200))).toEqual({ ok: true, challenge: '9'.repeat(200) });
  expect(ask('9'.repeat(201))).toEqual({ ok: false, reason: 'hub.challenge: at most 200 characters' });
  for (const bad of ['<b>\n', 'tab\there', 'é', '\u0000', 'del\u007f', 'line\r\n'])
    expect(ask(bad)).toEqual({ ok: false, reason: 'hub.challenge: printable ASCII only' });
});
