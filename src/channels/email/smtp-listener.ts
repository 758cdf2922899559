// The service's SMTP door (issue 47; docs/design/issue-47-research.md §3): smtp-server, receiving
// mail for the agents' addresses and handing each whole message to the caller. It holds nothing
// past a message and decides nothing about it beyond the envelope: which recipients exist is the
// caller's answer, what the message means is the caller's job after `onMessage` resolves.
//
// Plain SMTP on purpose: no AUTH (nobody sends as us through this door) and no STARTTLS (no
// certificate to present yet; smtp-server's built-in one has a published key). Every resource a
// client can take is bounded: connections, recipients, bytes, idle time, the close.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

/** A received message, as `onMessage` gets it: after DATA ended, within every bound. */
export interface ReceivedMessage {
  raw: Buffer;
  /** The envelope's MAIL FROM ('' for the null return path: a bounce or another automatic message). */
  mailFrom: string;
  /** The accepted RCPT TO addresses, lower case, each once. */
  recipients: string[];
  remoteAddress: string;
  /** The name the client gave in HELO/EHLO ('' if none). */
  helo: string;
}

export interface SmtpListenerOptions {
  host: string;
  /** 0 picks a free port (tests); `SmtpListener.port` says which. */
  port: number;
  /** The name in the greeting and the EHLO answer. */
  serverName: string;
  /**
   * A message's size, at most: advertised as SIZE (a MAIL FROM declaring more is refused with 552),
   * and a DATA over it is answered 552 whatever its declaration. Past it nothing more is kept; the
   * rest is read and dropped, so the client hears the answer instead of a reset.
   */
  maxBytes: number;
  /** Recipients of one message, at most: the next RCPT TO is answered 452 (the client sends the rest later). */
  maxRecipients: number;
  /** Connections at once, at most: one more is greeted with 421 and closed. */
  maxClients: number;
  /** Idle time a client is given before it is disconnected (a silent client would otherwise hold a connection slot). */
  socketTimeoutMs: number;
  /** How long `close()` lets open sessions finish before answering them 421 and closing them (default 10 s). */
  closeTimeoutMs?: number;
  /** Whether a recipient (lower case) is an address here: false is 550 5.1.1, 'temporary' (or a throw) is 451 4.3.0. */
  acceptsRecipient(address: string): Promise<boolean | 'temporary'>;
  /**
   * Called once per message, after DATA ended within the bounds. Resolving answers 250; rejecting
   * with MessageRefused answers 554 with its words (the message cannot be read: no retry helps);
   * rejecting otherwise answers 451 4.3.0 (the sender retries later) and the reason stays here: the
   * client is told nothing of it. Keep it short (store the message, then resolve): the client waits, and
   * `socketTimeoutMs` counts that wait as idle time.
   */
  onMessage(message: ReceivedMessage): Promise<void>;
  /** A connection's error (a client's reset, a socket timeout); never carries a message's content. Ignored when absent. */
  onConnectionError?(error: Error): void;
}

export interface SmtpListener {
  port: number;
  /** Stops accepting; sessions still open get `closeTimeoutMs` to finish, then 421 and a close. */
  close(): Promise<void>;
}

const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** An error smtp-server answers with the given code and text (its message is the reply's text). */
const reply = (responseCode: number, text: string) => Object.assign(new Error(text), { responseCode });

const TEMPORARY_FAILURE = () => reply(451, '4.3.0 Temporary failure, please try again later');

/** What `onMessage` rejects with to refuse a message for good (554, its words sent to the client): it cannot be read. */
export class MessageRefused extends Error {}

export async function startSmtpListener(opts: SmtpListenerOptions): Promise<SmtpListener> {
  const server = new SMTPServer({
    name: opts.serverName,
    secure: false,
    hideSTARTTLS: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    authOptional: true,
    // A reverse lookup would ask the system's resolver about every client, a delay a client controls.
    disableReverseLookup: true,
    logger: false,
    size: opts.maxBytes,
    rejectOversized: true,
    maxRecipients: opts.maxRecipients,
    maxClients: opts.maxClients,
    socketTimeout: opts.socketTimeoutMs,
    closeTimeout: opts.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS,
    onRcptTo(address, _session, callback) {
      const lower = address.address.toLowerCase();
      opts.acceptsRecipient(lower).then(
        (accepted) => {
          if (accepted === true) callback();
          else if (accepted === 'temporary') callback(TEMPORARY_FAILURE());
          else callback(reply(550, `5.1.1 <${address.address}>: no such agent here`));
        },
        () => callback(TEMPORARY_FAILURE()),
      );
    },
    onData(stream, session, callback) {
      receive(stream, session, opts).then(
        () => callback(null, 'OK: message queued'),
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen(opts.port, opts.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  // Without a listener an 'error' event would end the process: a client's reset is no reason.
  server.on('error', (error) => opts.onConnectionError?.(error));
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Reads one message's DATA, keeping at most `maxBytes`, and hands it over when it ended within them. */
function receive(stream: SMTPServerDataStream, session: SMTPServerSession, opts: SmtpListenerOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      // Past the bound the rest is read (so the client gets its 552) but not kept.
      if (received <= opts.maxBytes) chunks.push(chunk);
    });
    // The client went away mid-message: smtp-server destroys the stream, no 'end' follows.
    stream.once('error', (error) => reject(error));
    stream.once('end', () => {
      if (stream.sizeExceeded || received > opts.maxBytes) return reject(reply(552, `5.3.4 Message exceeds the maximum size of ${opts.maxBytes} bytes`));
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const recipients = [...new Set(session.envelope.rcptTo.map((r) => r.address.toLowerCase()))];
      opts
        .onMessage({ raw: Buffer.concat(chunks, received), mailFrom, recipients, remoteAddress: session.remoteAddress, helo: session.hostNameAppearsAs || '' })
        .then(resolve, (err: unknown) => reject(err instanceof MessageRefused ? reply(554, `5.6.0 ${err.message}`) : TEMPORARY_FAILURE()));
    });
  });
}
