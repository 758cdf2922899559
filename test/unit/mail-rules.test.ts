// The loop rules and allowed_senders (src/domain/mail-rules.ts): each rule stops the mail it names
// and only that; the patterns match exactly what docs/channels.md says, and nothing by accident.
import { loopReason, senderAllowed, isBareAddress } from '../../src/domain/mail-rules';

const own = { addresses: new Set(['support@agents.test']) };
const mail = (headers = {}, returnPath = 'bob@acme.test', from = 'bob@acme.test') => ({ returnPath, from, headers });

test('auto-replies, bounces, lists, bulk and our own mail start nothing; an ordinary mail does', () => {
  expect(loopReason(mail(), own)).toBeNull();
  expect(loopReason(mail({ autoSubmitted: 'no' }), own)).toBeNull();
  expect(loopReason(mail({ autoSubmitted: 'auto-replied; owner-email="x@y"' }), own)).toMatch(/^Auto-Submitted: auto-replied/);
  expect(loopReason(mail({}, ''), own)).toMatch(/null return path/);
  expect(loopReason(mail({ listId: '<dev.lists.acme.test>' }), own)).toMatch(/List-Id/);
  expect(loopReason(mail({ precedence: ' Bulk ' }), own)).toBe('Precedence: bulk');
  expect(loopReason(mail({ precedence: 'first-class' }), own)).toBeNull();
  expect(loopReason(mail({}, 'x@agents.test', 'Support@Agents.test'), own)).toMatch(/own address/);
});

test('allowed_senders: an address, a domain, its subdomains; an empty list allows no one', () => {
  expect(senderAllowed('Bob@Acme.test', ['bob@acme.test'])).toBe(true);
  expect(senderAllowed('eve@acme.test', ['bob@acme.test'])).toBe(false);
  expect(senderAllowed('eve@acme.test', ['@acme.test'])).toBe(true);
  expect(senderAllowed('eve@eu.acme.test', ['@acme.test'])).toBe(false);
  expect(senderAllowed('eve@eu.acme.test', ['@*.acme.test'])).toBe(true);
  expect(senderAllowed('eve@acme.test', ['@*.acme.test'])).toBe(false);
  expect(senderAllowed('eve@evilacme.test', ['@*.acme.test'])).toBe(false);
  expect(senderAllowed('eve@acme.test', [])).toBe(false);
  expect(senderAllowed('not-an-address', ['@acme.test'])).toBe(false);
});

test('a long hostile address is decided in linear time', () => {
  const address = `${'a'.repeat(200_000)}@${'b.'.repeat(100_000)}test`;
  const started = process.hrtime.bigint();
  expect(senderAllowed(address, ['@*.test', '@x.test', 'y@z.test'])).toBe(true);
  expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
});

test('a recipient is one plain address: lists, groups, display names and quoting are not', () => {
  for (const ok of ['ops@partner.test', 'a.b+c@x.example.org']) expect([ok, isBareAddress(ok)]).toEqual([ok, true]);
  for (const bad of [
    'victim@evil.test,b@partner.test',
    'g:evil@evil.test;@partner.test',
    'Eve <e@evil.test>',
    '"a@b"@partner.test',
    'a@b@partner.test',
    'a @partner.test',
    '@partner.test',
    'a@',
    'a@x\n.test',
  ])
    expect([bad, isBareAddress(bad)]).toEqual([bad, false]);
});
