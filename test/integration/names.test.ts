// Names that deceive are refused (400 naming where): control characters, separators and the
// bidirectional controls that make text display other than it reads. Slugs derived from names in any
// script are transliterated, so they still say the name.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const RULE =
  'must be text without control characters (tabs and newlines included), line or paragraph separators, or bidirectional overrides, embeddings or isolates (U+202A-U+202E, U+2066-U+2069)';

test.each([
  ['a right-to-left override', '\u202Eevil.exe'],
  ['an isolate', 'pay\u2067ment'],
  ['a newline', 'two\nlines'],
  ['a tab', 'tab\there'],
  ['a C1 control', 'next\u0085line'],
  ['a line separator', 'line\u2028sep'],
])('an agent name with %s: 400 naming body.name, nothing written', async (_what, name) => {
  const res = await t.client().PUT('/api/build/agents', { body: minimalAgent(name) });
  expect([res.response.status, res.error]).toEqual([400, { error: `body.name: ${RULE}` }]);
  const listed = await t.client().GET('/api/build/agents');
  expect(listed.data!.data.map((a) => a.name)).not.toContain(name);
});

test('workflow, trigger and mail display names are held to the same rule', async () => {
  const workflow = await t.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'bidi', name: 'a\u202Db', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }] },
  });
  expect([workflow.response.status, workflow.error]).toEqual([400, { error: `body.name: ${RULE}` }]);
  const trigger = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent('Triggered'), triggers: [{ kind: 'webhook', name: 'new\r\norder' }] },
  });
  expect([trigger.response.status, trigger.error]).toEqual([400, { error: `body.triggers[0].name: ${RULE}` }]);
  const mail = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent('Mailer'), email: { enabled: false, allowed_senders: [], from_name: 'Acme\r\nBcc: all@example.org' } },
  });
  expect([mail.response.status, mail.error]).toEqual([400, { error: `body.email.from_name: ${RULE}` }]);
  // What looks like text in any script, emoji and marks of right-to-left writing included, is a name.
  for (const name of ['שלום עולם', 'مرحبا 👋', 'Ærø\u200F', 'Zoë & Co.']) {
    const ok = await t.client().PUT('/api/build/agents', { body: minimalAgent(name) });
    expect([ok.response.status, ok.data?.data.document.name]).toEqual([201, name]);
  }
});

test('a slug derived from a name in another script is its transliteration', async () => {
  const cases: [string, string][] = [
    ['straße', 'strasse'],
    ['Привет мир', 'privet-mir'],
    ['你好', 'ni-hao'],
    ['Ωmega Ψ', 'omega-ps'],
  ];
  for (const [name, slug] of cases) {
    const res = await t.client().PUT('/api/build/agents', { body: minimalAgent(name) });
    expect([res.response.status, res.data?.data.document.slug]).toEqual([201, slug]);
  }
});
