// An agent's outgoing mail, composed (src/channels/email/compose-reply.ts, mail-words.ts): reply
// subjects in several languages' conventions, the thread's ids and their bound, the headers that
// stop other robots answering, and the service's words in the agent's locale.
import { MAX_REFERENCES, SUBJECT_CHARS, composeNew, composeReply, newMessageId, referencesFor, replySubject } from '../../src/channels/email/compose-reply';
import { MAIL_LANGUAGES, wordsFor } from '../../src/channels/email/mail-words';

describe('replySubject', () => {
  test.each([
    ['Order 7', 'Re: Order 7'],
    ['Re: Order 7', 'Re: Order 7'],
    ['RE: Order 7', 'RE: Order 7'],
    ['re:Order 7', 're:Order 7'],
    ['AW: Bestellung 7', 'AW: Bestellung 7'],
    ['Aw: Bestellung 7', 'Aw: Bestellung 7'],
    ['SV: Order 7', 'SV: Order 7'],
    ['Sv: Order 7', 'Sv: Order 7'],
    ['Antw: Bestelling 7', 'Antw: Bestelling 7'],
    ['RIF: Ordine 7', 'RIF: Ordine 7'],
    ['Re[2]: Order 7', 'Re[2]: Order 7'],
    ['RE : Commande 7', 'RE : Commande 7'],
    ['回复：订单', '回复：订单'],
    ['Fwd: Order 7', 'Re: Fwd: Order 7'],
    ['Reminder: Order 7', 'Re: Reminder: Order 7'],
    ['Rent: due', 'Re: Rent: due'],
    ['  Order 7  ', 'Re: Order 7'],
    ['Order\r\n 7', 'Re: Order   7'],
  ])('%j -> %j', (subject, expected) => {
    expect(replySubject(subject, 'en')).toBe(expected);
  });

  test('no subject, or only spaces: the locale\'s "(no subject)"', () => {
    expect(replySubject(null, 'en')).toBe('Re: (no subject)');
    expect(replySubject('', 'de')).toBe('Re: (kein Betreff)');
    expect(replySubject('   ', 'fr-CA')).toBe('Re: (sans objet)');
    expect(replySubject(null, 'pt_BR')).toBe('Re: (sem assunto)');
    expect(replySubject(null, 'ja')).toBe('Re: (no subject)');
  });

  test('a long subject is cut at its bound; a huge one costs no more than that', () => {
    expect(replySubject('x'.repeat(10_000_000), 'en')).toBe(`Re: ${'x'.repeat(SUBJECT_CHARS)}`);
    expect(replySubject(`${'😀'.repeat(SUBJECT_CHARS)}`, 'en').length).toBeLessThanOrEqual(SUBJECT_CHARS + 4);
  });
});

describe('referencesFor', () => {
  test("the parent's references, then the parent's id, each once", () => {
    expect(referencesFor('<p@a.test>', ['<r1@a.test>', '<r2@a.test>'])).toEqual(['<r1@a.test>', '<r2@a.test>', '<p@a.test>']);
    expect(referencesFor('<p@a.test>', ['<r1@a.test>', '<p@a.test>', '<r1@a.test>'])).toEqual(['<r1@a.test>', '<p@a.test>']);
    expect(referencesFor(null, ['<r1@a.test>'])).toEqual(['<r1@a.test>']);
    expect(referencesFor(null, [])).toEqual([]);
  });

  test('what is not one <id> is dropped', () => {
    expect(referencesFor('<p@a.test>', ['r1@a.test', '<a b@c>', '<x<y>', `<${'x'.repeat(300)}@a.test>`, '<ok@a.test>'])).toEqual(['<ok@a.test>', '<p@a.test>']);
  });

  test("past the bound: the thread's first id and the latest", () => {
    const chain = Array.from({ length: 100 }, (_, i) => `<m${i}@a.test>`);
    const refs = referencesFor('<p@a.test>', chain);
    expect(refs).toHaveLength(MAX_REFERENCES);
    expect(refs[0]).toBe('<m0@a.test>');
    expect(refs.at(-1)).toBe('<p@a.test>');
    expect(refs.at(-2)).toBe('<m99@a.test>');
    expect(refs[1]).toBe(`<m${100 - (MAX_REFERENCES - 2)}@a.test>`);
  });
});

test('newMessageId: a fresh <uuid@domain>; a domain that cannot end one is refused', () => {
  const id = newMessageId('Agents.Test');
  expect(id).toMatch(/^<[0-9a-f-]{36}@agents\.test>$/);
  expect(newMessageId('agents.test')).not.toBe(id);
  expect(() => newMessageId('')).toThrow();
  expect(() => newMessageId('a>b')).toThrow();
  expect(() => newMessageId('x@y')).toThrow();
});

const agent = { name: 'Support Bot', address: 'support.abc@agents.test' };

test('composeReply: to the sender, in the thread, marked auto-replied, with the footer in the locale', () => {
  const mail = composeReply({
    from: agent,
    parent: { from: 'bob@acme.test', subject: 'Bestellung 7', messageId: '<m2@acme.test>', references: ['<m1@agents.test>'] },
    text: 'Sie ist unterwegs.\n\n',
    locale: 'de',
  });
  expect(mail).toMatchObject({
    from: agent,
    to: ['bob@acme.test'],
    subject: 'Re: Bestellung 7',
    inReplyTo: '<m2@acme.test>',
    references: ['<m1@agents.test>', '<m2@acme.test>'],
    headers: { 'Auto-Submitted': 'auto-replied' },
  });
  expect(mail.messageId).toMatch(/^<[0-9a-f-]{36}@agents\.test>$/);
  expect(mail.text).toBe('Sie ist unterwegs.\n\n-- \nDiese Nachricht wurde von einem KI-Agenten geschrieben.\n');
});

test('composeReply to a mail without a Message-ID: no In-Reply-To', () => {
  const mail = composeReply({ from: agent, parent: { from: 'bob@acme.test', subject: null, messageId: null, references: [] }, text: 'Hi', locale: 'xx' });
  expect(mail).toMatchObject({ subject: 'Re: (no subject)', inReplyTo: null, references: [] });
});

test('composeNew: no thread, marked auto-generated; a missing subject in the locale', () => {
  const mail = composeNew({ from: agent, to: ['ann@acme.test', 'bob@acme.test'], subject: null, text: 'Ihr Bericht', locale: 'nl' });
  expect(mail).toMatchObject({
    to: ['ann@acme.test', 'bob@acme.test'],
    subject: '(geen onderwerp)',
    inReplyTo: null,
    references: [],
    headers: { 'Auto-Submitted': 'auto-generated' },
  });
  expect(mail.text.endsWith('-- \nDit bericht is geschreven door een AI-agent.\n')).toBe(true);
});

test('every language has its words; an unknown or odd locale gets English', () => {
  expect(MAIL_LANGUAGES).toEqual(expect.arrayContaining(['en', 'de', 'fr', 'es', 'it', 'pt', 'nl']));
  const footers = new Set(MAIL_LANGUAGES.map((l) => wordsFor(l).agentFooter));
  expect(footers.size).toBe(MAIL_LANGUAGES.length);
  expect(wordsFor('IT-ch').noSubject).toBe('(nessun oggetto)');
  expect(wordsFor('es_419').noSubject).toBe('(sin asunto)');
  for (const odd of ['', 'constructor', '__proto__', 'toString', 'x'.repeat(1000)]) expect(wordsFor(odd)).toEqual(wordsFor('en'));
});
