// The senders' signatures (src/apps/events/signatures.ts), each made by the sender's own library or
// documented algorithm: GitHub's @octokit/webhooks-methods, Stripe's test header helper, the
// standardwebhooks library, and Slack's documented HMAC. A byte changed, a stale timestamp, a
// wrong secret are refused; during a rotation either secret verifies.
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { verifyGithub, verifySlack, verifyStandardWebhook, verifyStripe } from '../../src/apps/events/signatures';
import { githubSignature } from '../helpers/github-signature';

const body = Buffer.from(JSON.stringify({ action: 'opened', number: 7, text: 'héllo' }));
const tampered = Buffer.from(body);
tampered[5] = (tampered[5] as number) ^ 1;
const now = Math.floor(Date.now() / 1000);

describe('github', () => {
  test('a body signed with the secret, or during a rotation the previous one, verifies; a changed byte or another secret does not', () => {
    const header = githubSignature('gh-secret', body.toString('utf8'));
    expect(verifyGithub(body, header, ['gh-secret'])).toEqual({ ok: true });
    expect(verifyGithub(body, header, ['gh-new', 'gh-secret'])).toEqual({ ok: true });
    expect(verifyGithub(tampered, header, ['gh-secret'])).toEqual({ ok: false, reason: 'X-Hub-Signature-256 does not match the body' });
    expect(verifyGithub(body, header, ['other'])).toMatchObject({ ok: false });
    expect(verifyGithub(body, undefined, ['gh-secret'])).toMatchObject({ ok: false, reason: 'X-Hub-Signature-256 is missing' });
    expect(verifyGithub(body, `sha1=${'0'.repeat(40)}`, ['gh-secret'])).toMatchObject({ ok: false });
  });
});

describe('stripe', () => {
  const stripe = new Stripe('sk_test_x');
  const header = (secret: string, timestamp = now) => stripe.webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret, timestamp });

  test('a signature of the body at a current timestamp verifies; several v1 (a rotation) are each tried', () => {
    expect(verifyStripe(body, header('whsec_a'), ['whsec_a'], now)).toEqual({ ok: true });
    const rotated = `${header('whsec_old')},v1=${header('whsec_new').split('v1=')[1]}`;
    expect(verifyStripe(body, rotated, ['whsec_new'], now)).toEqual({ ok: true });
    expect(verifyStripe(body, rotated, ['whsec_old'], now)).toEqual({ ok: true });
  });

  test('a changed byte, another secret, a stale or future timestamp, a malformed header are refused', () => {
    expect(verifyStripe(tampered, header('whsec_a'), ['whsec_a'], now)).toMatchObject({ ok: false });
    expect(verifyStripe(body, header('whsec_b'), ['whsec_a'], now)).toMatchObject({ ok: false });
    expect(verifyStripe(body, header('whsec_a', now - 301), ['whsec_a'], now)).toMatchObject({ ok: false, reason: expect.stringContaining('300 s') });
    expect(verifyStripe(body, header('whsec_a', now + 301), ['whsec_a'], now)).toMatchObject({ ok: false });
    expect(verifyStripe(body, 'v1=abc', ['whsec_a'], now)).toMatchObject({ ok: false, reason: 'Stripe-Signature has no timestamp t=' });
    expect(verifyStripe(body, `t=${now}`, ['whsec_a'], now)).toMatchObject({ ok: false, reason: 'Stripe-Signature has no v1 signature' });
  });
});

describe('slack', () => {
  const slackSign = (secret: string, timestamp: number, raw: Buffer) =>
    `v0=${crypto.createHmac('sha256', secret).update(`v0:${timestamp}:`).update(raw).digest('hex')}`;

  test('the v0 signature verifies within 5 minutes; outside, or on a changed byte, it is refused', () => {
    expect(verifySlack(body, String(now), slackSign('slack-secret', now, body), ['slack-secret'], now)).toEqual({ ok: true });
    expect(verifySlack(tampered, String(now), slackSign('slack-secret', now, body), ['slack-secret'], now)).toMatchObject({ ok: false });
    const old = now - 301;
    expect(verifySlack(body, String(old), slackSign('slack-secret', old, body), ['slack-secret'], now)).toMatchObject({ ok: false });
    expect(verifySlack(body, undefined, slackSign('slack-secret', now, body), ['slack-secret'], now)).toMatchObject({ ok: false });
  });
});

describe('standard webhooks', () => {
  const secret = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
  const rotatedTo = `whsec_${Buffer.from('b'.repeat(32)).toString('base64')}`;
  const signed = (key: string, at = new Date()) => {
    const id = 'msg_1';
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(key).sign(id, at, body.toString('utf8')),
    };
  };

  test('verifies by the library, with either secret during a rotation; several signatures in the header', () => {
    expect(verifyStandardWebhook(body, signed(secret), [secret])).toEqual({ ok: true });
    expect(verifyStandardWebhook(body, signed(secret), [rotatedTo, secret])).toEqual({ ok: true });
    const both = { ...signed(secret), 'webhook-signature': `${signed(rotatedTo)['webhook-signature']} ${signed(secret)['webhook-signature']}` };
    expect(verifyStandardWebhook(body, both, [secret])).toEqual({ ok: true });
  });

  test('a changed byte, a stale timestamp, a missing header are refused', () => {
    expect(verifyStandardWebhook(tampered, signed(secret), [secret])).toMatchObject({ ok: false });
    expect(verifyStandardWebhook(body, signed(secret, new Date(Date.now() - 10 * 60_000)), [secret])).toMatchObject({ ok: false });
    expect(verifyStandardWebhook(body, { 'webhook-id': 'x' }, [secret])).toMatchObject({ ok: false });
  });
});
