// A received mail as a run gets it (src/channels/email/parse-mail.ts), from mail nodemailer builds:
// addresses, thread ids, loop headers, attachments as metadata only, the text cut at its bound.
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { MAIL_ATTACHMENTS_LISTED, MAIL_TEXT_CHARS, parseMail } from '../../src/channels/email/parse-mail';

async function build(options: Parameters<ReturnType<typeof nodemailer.createTransport>['sendMail']>[0]): Promise<Buffer> {
  const info = await nodemailer.createTransport({ streamTransport: true, buffer: true }).sendMail(options);
  return info.message as Buffer;
}

test('addresses, subject, text, thread ids and loop headers are read; attachments are names, types, sizes and hashes', async () => {
  const pdf = crypto.randomBytes(50_000);
  const raw = await build({
    from: 'Bob <bob@acme.test>',
    to: ['support@agents.test', 'Sales <sales@agents.test>'],
    subject: 'Re: Order 7',
    text: 'Where is it?',
    messageId: '<m2@acme.test>',
    inReplyTo: '<m1@agents.test>',
    references: ['<m0@acme.test>', '<m1@agents.test>'],
    headers: { 'Auto-Submitted': 'auto-replied', Precedence: 'bulk', 'List-Id': 'Dev <dev.lists.acme.test>' },
    attachments: [{ filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' }],
  });
  const mail = await parseMail(raw);
  expect(mail).toMatchObject({
    from: 'bob@acme.test',
    to: ['support@agents.test', 'sales@agents.test'],
    subject: 'Re: Order 7',
    messageId: '<m2@acme.test>',
    inReplyTo: '<m1@agents.test>',
    references: ['<m0@acme.test>', '<m1@agents.test>'],
    precedence: 'bulk',
    textCut: false,
    attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', size: 50_000, sha256: crypto.createHash('sha256').update(pdf).digest('hex') }],
    attachmentsNotListed: 0,
  });
  expect(mail.text.trim()).toBe('Where is it?');
  expect(mail.autoSubmitted).toMatch(/^auto-replied/);
  expect(mail.listId).toBeTruthy();
});

test('the text is cut at its bound; attachments past the listed number are counted, not listed', async () => {
  const raw = await build({
    from: 'bob@acme.test',
    to: 'support@agents.test',
    text: 'x'.repeat(MAIL_TEXT_CHARS + 10),
    attachments: Array.from({ length: MAIL_ATTACHMENTS_LISTED + 3 }, (_, i) => ({ filename: `f${i}.txt`, content: `file ${i}` })),
  });
  const mail = await parseMail(raw);
  expect(mail.text).toHaveLength(MAIL_TEXT_CHARS);
  expect(mail.textCut).toBe(true);
  expect(mail.attachments).toHaveLength(MAIL_ATTACHMENTS_LISTED);
  expect(mail.attachmentsNotListed).toBe(3);
});
