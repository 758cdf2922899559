// The event sender's Standard Webhooks signatures (src/services/event-signature.ts) are the ones the
// standardwebhooks package makes, and the package verifies them.
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { signatureOf, signingKeyOf } from '../../src/services/event-signature';

test('every signature is the package’s own, for any id, time and body (UTF-8 included), and verifies with it', () => {
  for (let i = 0; i < 200; i++) {
    const secret = `whsec_${crypto.randomBytes(24 + (i % 16)).toString('base64')}`;
    const id = `evt_${crypto.randomBytes(16).toString('hex')}`;
    const at = new Date(1_700_000_000_000 + i * 7_919_000);
    const body = JSON.stringify({ type: 'run.finished', n: i, text: 'é ✓ 😀'.repeat(i % 5), blob: crypto.randomBytes(i * 13).toString('base64') });
    const ours = signatureOf(signingKeyOf(secret), id, at, body);
    const webhook = new Webhook(secret);
    expect(ours).toBe(webhook.sign(id, at, body));
    // Verified by the package as a receiver would (now: its check of the timestamp's age passes).
    const now = new Date();
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureOf(signingKeyOf(secret), id, now, body),
    };
    expect(webhook.verify(body, headers)).toEqual(JSON.parse(body));
  }
});

test("another secret's signature differs", () => {
  const at = new Date();
  const a = signatureOf(signingKeyOf(`whsec_${crypto.randomBytes(32).toString('base64')}`), 'evt_1', at, '{}');
  const b = signatureOf(signingKeyOf(`whsec_${crypto.randomBytes(32).toString('base64')}`), 'evt_1', at, '{}');
  expect(a).not.toBe(b);
});
