// WhatsApp Business deliveries read (src/channels/whatsapp/webhook-payload.ts): Meta's reference
// examples (docs/design/issue-47-research.md, section 5), a mixed batch, and what is refused by
// its JSON path or bounded.
import { readWhatsAppDelivery } from '../../src/channels/whatsapp/webhook-payload';

const WAMID = 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=';

/** Meta's reference example of an incoming text message, as sent. */
const metaTextExample = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
  "messaging_product":"whatsapp",
  "metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
  "contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],
  "messages":[{"from":"16505551234","id":"${WAMID}",
               "timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}]}}]}]}`;

const delivery = (value: Record<string, unknown>, field = 'messages') =>
  Buffer.from(JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: 'WABA', changes: [{ field, value }] }] }));

const message = (n: number, extra: Record<string, unknown> = {}) => ({
  from: '16505551234',
  id: `wamid.${n}`,
  timestamp: '1749416383',
  type: 'text',
  text: { body: `message ${n}` },
  ...extra,
});
const status = (n: number, value = 'delivered', extra: Record<string, unknown> = {}) => ({
  id: `wamid.out.${n}`,
  status: value,
  timestamp: '1750857384',
  recipient_id: '5516992318222',
  ...extra,
});

test("Meta's example text message: the number, the sender and their name, the time, the text", () => {
  expect(readWhatsAppDelivery(Buffer.from(metaTextExample))).toEqual({
    ok: true,
    phoneNumberId: '106540352242922',
    messages: [
      {
        id: WAMID,
        from: '16505551234',
        name: 'Sheena Nelson',
        timestamp: '2025-06-08T20:59:43.000Z',
        type: 'text',
        text: 'Does it come in another color?',
        textCut: false,
        context: null,
        phoneNumberId: '106540352242922',
      },
    ],
    statuses: [],
    messagesNotRead: 0,
    statusesNotRead: 0,
  });
});

test("Meta's status callback: the sent message's wamid, its status, the recipient and the time; pricing is ignored", () => {
  const body = `{"object":"whatsapp_business_account","entry":[{"id":"<WABA_ID>","changes":[{"field":"messages","value":{
  "messaging_product":"whatsapp","metadata":{"display_phone_number":"15556459128","phone_number_id":"590968830767958"},
  "statuses":[{"id":"wamid.HBgN...","status":"sent","timestamp":"1750857384","recipient_id":"5516992318222",
    "conversation":{"id":"a75d...","expiration_timestamp":"1750943820","origin":{"type":"service"}},
    "pricing":{"billable":true,"pricing_model":"CBP","category":"service"}}]}}]}]}`;
  expect(readWhatsAppDelivery(Buffer.from(body))).toEqual({
    ok: true,
    phoneNumberId: '590968830767958',
    messages: [],
    statuses: [
      { id: 'wamid.HBgN...', status: 'sent', recipient: '5516992318222', timestamp: '2025-06-25T13:16:24.000Z', error: null, phoneNumberId: '590968830767958' },
    ],
    messagesNotRead: 0,
    statusesNotRead: 0,
  });
});

test('a failed status carries its first error as `code title: details`, bounded', () => {
  const failed = status(1, 'failed', {
    errors: [
      {
        code: 131047,
        title: 'Re-engagement message',
        message: 'Re-engagement message',
        error_data: { details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.' },
      },
      { code: 1, title: 'second' },
    ],
  });
  const read = readWhatsAppDelivery(delivery({ statuses: [failed, status(2, 'failed', { errors: [{ code: 131026, title: 'x'.repeat(1000) }] })] }));
  if (!read.ok) throw new Error(read.reason);
  expect(read.statuses[0]!.error).toBe(
    '131047 Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
  );
  expect(read.statuses[1]!.error).toHaveLength(300);
  expect(read.statuses[1]!.error!.startsWith('131026 xxx')).toBe(true);
});

test('a mixed batch: messages of several types, a reply with its context, statuses, and another change kind ignored', () => {
  const body = {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'WABA',
        changes: [
          { field: 'message_template_status_update', value: { event: 'APPROVED', messages: 'not read at all' } },
          {
            field: 'messages',
            value: {
              metadata: { phone_number_id: '111' },
              contacts: [{ profile: { name: 'Ann' }, wa_id: '1001' }, { wa_id: '1002' }],
              messages: [
                message(1, { from: '1001', context: { from: '15550783881', id: 'wamid.ours' } }),
                { from: '1002', id: 'wamid.img', timestamp: 1749416400, type: 'image', image: { id: 'media-1', mime_type: 'image/jpeg' } },
                message(3, { from: '1001', context: { forwarded: true } }),
              ],
              statuses: [status(1, 'read'), status(2, 'deleted'), status(3, 'delivered')],
            },
          },
        ],
      },
      { id: 'WABA', changes: [{ field: 'messages', value: { metadata: { phone_number_id: '222' }, messages: [message(4, { from: '1003' })] } }] },
    ],
  };
  const read = readWhatsAppDelivery(Buffer.from(JSON.stringify(body)));
  if (!read.ok) throw new Error(read.reason);
  expect(read.phoneNumberId).toBe('111');
  expect(read.messages.map((m) => [m.id, m.from, m.name, m.type, m.text, m.context, m.phoneNumberId])).toEqual([
    ['wamid.1', '1001', 'Ann', 'text', 'message 1', { from: '15550783881', id: 'wamid.ours' }, '111'],
    ['wamid.img', '1002', null, 'image', null, null, '111'],
    ['wamid.3', '1001', 'Ann', 'text', 'message 3', null, '111'],
    ['wamid.4', '1003', null, 'text', 'message 4', null, '222'],
  ]);
  expect(read.messages[1]!.timestamp).toBe('2025-06-08T21:00:00.000Z');
  // A status this service does not track (deleted) is left out.
  expect(read.statuses.map((s) => [s.id, s.status])).toEqual([
    ['wamid.out.1', 'read'],
    ['wamid.out.3', 'delivered'],
  ]);
});

test('a text over 4096 characters is cut there, a surrogate pair kept whole, and says so', () => {
  const long = `${'a'.repeat(4095)}😀😀`;
  const read = readWhatsAppDelivery(delivery({ messages: [message(1, { text: { body: long } })] }));
  if (!read.ok) throw new Error(read.reason);
  expect(read.messages[0]!.text).toBe(`${'a'.repeat(4095)}😀`);
  expect(read.messages[0]!.textCut).toBe(true);
  const name = readWhatsAppDelivery(delivery({ contacts: [{ profile: { name: 'n'.repeat(1000) }, wa_id: '16505551234' }], messages: [message(1)] }));
  expect(name.ok && name.messages[0]!.name).toBe('n'.repeat(256));
});

test('over 100 messages or 100 statuses: the first 100 of each are read, the rest counted', () => {
  const messages = Array.from({ length: 150 }, (_, n) => message(n));
  const statuses = Array.from({ length: 120 }, (_, n) => status(n));
  const read = readWhatsAppDelivery(delivery({ messages, statuses }));
  if (!read.ok) throw new Error(read.reason);
  expect(read.messages).toHaveLength(100);
  expect(read.messages[99]!.id).toBe('wamid.99');
  expect(read.messagesNotRead).toBe(50);
  expect(read.statuses).toHaveLength(100);
  expect(read.statusesNotRead).toBe(20);
  // The bound is per delivery, across its changes.
  const twice = Buffer.from(
    JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        { changes: [{ field: 'messages', value: { messages: messages.slice(0, 80) } }] },
        { changes: [{ field: 'messages', value: { messages: messages.slice(80, 120) } }] },
      ],
    }),
  );
  const both = readWhatsAppDelivery(twice);
  expect(both.ok && [both.messages.length, both.messagesNotRead, both.messages[99]!.id]).toEqual([100, 20, 'wamid.99']);
});

test('a value of the wrong type refuses the delivery, naming its JSON path', () => {
  const refusal = (value: Record<string, unknown>) => {
    const read = readWhatsAppDelivery(delivery(value));
    return read.ok ? 'read' : read.reason;
  };
  const at = 'entry[0].changes[0].value';
  expect(refusal({ messages: [message(0), message(1, { id: 42 })] })).toBe(`${at}.messages[1].id: must be a non-empty string`);
  expect(refusal({ messages: [message(0, { id: `wamid.${'x'.repeat(300)}` })] })).toBe(`${at}.messages[0].id: must be at most 256 characters`);
  expect(refusal({ messages: [message(0, { text: { body: 7 } })] })).toBe(`${at}.messages[0].text.body: must be a string`);
  expect(refusal({ messages: [message(0, { text: undefined })] })).toBe(`${at}.messages[0].text: must be an object`);
  expect(refusal({ messages: [message(0, { timestamp: 'yesterday' })] })).toBe(
    `${at}.messages[0].timestamp: must be Unix seconds (a string of at most 12 digits)`,
  );
  expect(refusal({ messages: [message(0, { context: { id: 'wamid.x' } })] })).toBe(`${at}.messages[0].context.from: must be a non-empty string`);
  expect(refusal({ messages: [message(0, { type: 't'.repeat(65) })] })).toBe(`${at}.messages[0].type: must be at most 64 characters`);
  expect(refusal({ messages: { 0: message(0) } })).toBe(`${at}.messages: must be an array`);
  expect(refusal({ messages: ['text'] })).toBe(`${at}.messages[0]: must be an object`);
  expect(refusal({ statuses: [status(0, 'read', { recipient_id: null })] })).toBe(`${at}.statuses[0].recipient_id: must be a non-empty string`);
  expect(refusal({ statuses: [{ ...status(0), status: 3 }] })).toBe(`${at}.statuses[0].status: must be a string`);
  expect(refusal({ statuses: [status(0, 'failed', { errors: [{ code: 1, error_data: { details: [] } }] })] })).toBe(
    `${at}.statuses[0].errors[0].error_data.details: must be a string`,
  );
  expect(refusal({ metadata: { phone_number_id: 106540352242922 } })).toBe(`${at}.metadata.phone_number_id: must be a non-empty string`);
  expect(refusal({ contacts: [{ wa_id: '1', profile: { name: {} } }] })).toBe(`${at}.contacts[0].profile.name: must be a string`);
});

test('not a WhatsApp Business delivery, or not JSON, is refused', () => {
  const reason = (text: string) => {
    const read = readWhatsAppDelivery(Buffer.from(text));
    return read.ok ? 'read' : read.reason;
  };
  expect(reason('{"object":"page","entry":[]}')).toBe('object: must be whatsapp_business_account');
  expect(reason('{"entry":[]}')).toBe('object: must be whatsapp_business_account');
  expect(reason('{"object":"whatsapp_business_account"}')).toBe('entry: must be an array');
  expect(reason('{"object":"whatsapp_business_account","entry":[7]}')).toBe('entry[0]: must be an object');
  expect(reason('{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":[]}]}]}')).toBe(
    'entry[0].changes[0].value: must be an object',
  );
  expect(reason('[]')).toBe('body: must be an object');
  expect(reason('{"object":')).toBe('body: must be JSON (nested at most 64 deep)');
  expect(reason(`${'['.repeat(100)}${']'.repeat(100)}`)).toBe('body: must be JSON (nested at most 64 deep)');
  expect(readWhatsAppDelivery(Buffer.alloc(4 * 1024 * 1024 + 1, 0x20))).toEqual({ ok: false, reason: 'body: at most 4194304 bytes' });
});

test('unknown fields are ignored and a delivery with nothing to read is read as empty', () => {
  expect(readWhatsAppDelivery(delivery({ messaging_product: 'whatsapp', something_new: { deep: [1, 2, 3] } }))).toEqual({
    ok: true,
    phoneNumberId: null,
    messages: [],
    statuses: [],
    messagesNotRead: 0,
    statusesNotRead: 0,
  });
});
