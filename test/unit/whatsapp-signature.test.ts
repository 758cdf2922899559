// Meta's X-Hub-Signature-256 on WhatsApp deliveries (src/channels/whatsapp/signature.ts), made here
// the way Meta documents it: sha256= and the hex HMAC-SHA256 of the raw body with the app secret.
import crypto from 'node:crypto';
import { verifyWhatsAppSignature } from '../../src/channels/whatsapp/signature';

const body = Buffer.from('{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"text":"héllo"}}]}]}');
const sign = (secret: string, raw: Buffer) => `sha256=${crypto.createHmac('sha256', secret).update(raw).digest('hex')}`;

test('a body signed with the app secret verifies, with its hex in either case', () => {
  expect(verifyWhatsAppSignature(body, sign('app-secret', body), ['app-secret'])).toEqual({ ok: true });
  expect(verifyWhatsAppSignature(body, `sha256=${sign('app-secret', body).slice(7).toUpperCase()}`, ['app-secret'])).toEqual({ ok: true });
});

test('during a rotation a signature by the second secret verifies too', () => {
  expect(verifyWhatsAppSignature(body, sign('old-secret', body), ['new-secret', 'old-secret'])).toEqual({ ok: true });
  expect(verifyWhatsAppSignature(body, sign('new-secret', body), ['new-secret', 'old-secret'])).toEqual({ ok: true });
});

test('one changed byte of the body is refused, naming the header and the rule', () => {
  const tampered = Buffer.from(body);
  tampered[10] = (tampered[10] as number) ^ 1;
  expect(verifyWhatsAppSignature(tampered, sign('app-secret', body), ['app-secret'])).toEqual({
    ok: false,
    reason: 'X-Hub-Signature-256: does not match the body (HMAC-SHA256 of the raw bytes with the app secret)',
  });
});

test('a signature by another secret is refused', () => {
  expect(verifyWhatsAppSignature(body, sign('other-secret', body), ['app-secret'])).toMatchObject({
    ok: false,
    reason: expect.stringContaining('does not match'),
  });
});

test('a missing header is refused as required', () => {
  expect(verifyWhatsAppSignature(body, undefined, ['app-secret'])).toEqual({ ok: false, reason: 'X-Hub-Signature-256: required (Meta signs every delivery)' });
  expect(verifyWhatsAppSignature(body, '', ['app-secret'])).toMatchObject({ ok: false, reason: expect.stringContaining('required') });
});

test('a malformed header is refused by its shape before anything is compared', () => {
  const good = sign('app-secret', body);
  const shape = 'X-Hub-Signature-256: must be sha256= followed by 64 hex digits';
  for (const header of [
    `sha1=${good.slice(7, 47)}`,
    good.slice(0, -1),
    `${good}0`,
    `SHA256=${good.slice(7)}`,
    `sha256=${'g'.repeat(64)}`,
    `sha256=${'0'.repeat(63)}\u0010`,
    `sha256= ${good.slice(8)}`,
    'x'.repeat(100_000),
  ])
    expect(verifyWhatsAppSignature(body, header, ['app-secret'])).toEqual({ ok: false, reason: shape });
});

test('without a configured secret nothing verifies, not even a signature made with the empty secret', () => {
  expect(verifyWhatsAppSignature(body, sign('', body), [])).toMatchObject({ ok: false, reason: expect.stringContaining('no app secret') });
  expect(verifyWhatsAppSignature(body, sign('', body), [''])).toMatchObject({ ok: false, reason: expect.stringContaining('no app secret') });
});
