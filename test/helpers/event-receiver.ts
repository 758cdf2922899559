// A receiver of the service's event deliveries on loopback, as an integrator would run one: every
// delivery is verified with the `standardwebhooks` library against each secret it was told, and
// recorded with what verified it. What it answers is the test's to choose (`respond`).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedEvent {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  event: { type: string; timestamp: string; data: Record<string, unknown> & { sequence: number } };
  /** For each secret the receiver holds (in order), whether the delivery verified with it. */
  verifiedWith: boolean[];
  /** What the receiver answered. */
  answered: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface EventReceiver {
  url: string;
  secrets: string[];
  received: ReceivedEvent[];
  /** What to answer a delivery (200 by default). */
  respond: (event: ReceivedEvent) => Reply | Promise<Reply>;
  /** Waits until `predicate` holds of what was received, or fails naming what came. */
  waitFor(predicate: (received: ReceivedEvent[]) => boolean, timeoutMs?: number): Promise<ReceivedEvent[]>;
  close(): Promise<void>;
}

export async function startEventReceiver(secrets: string[] = []): Promise<EventReceiver> {
  const received: ReceivedEvent[] = [];
  const receiver: EventReceiver = {
    url: '',
    secrets,
    received,
    respond: () => ({ status: 200, body: 'ok' }),
    waitFor: async (predicate, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`the receiver did not see what was awaited; it saw ${JSON.stringify(received.map((r) => r.event.type))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      };
      const verifiedWith = receiver.secrets.map((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      const event: ReceivedEvent = {
        id: headers['webhook-id'],
        timestamp: headers['webhook-timestamp'],
        signature: headers['webhook-signature'],
        body,
        event: JSON.parse(body) as ReceivedEvent['event'],
        verifiedWith,
        answered: 0,
      };
      void Promise.resolve(receiver.respond(event)).then((reply) => {
        event.answered = reply.status;
        received.push(event);
        res.writeHead(reply.status, reply.headers ?? {}).end(reply.body ?? '');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  return receiver;
}
