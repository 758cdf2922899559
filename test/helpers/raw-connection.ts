// A raw HTTP/1.1 connection to a test service: what a client that streams a large body, or sends
// its head alone, sees byte by byte.
import net from 'node:net';

export function rawConnection(baseUrl: string) {
  const socket = net.connect(Number(new URL(baseUrl).port), '127.0.0.1');
  let received = Buffer.alloc(0);
  let closed = false;
  const waiters: (() => void)[] = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    wake();
  });
  socket.on('error', () => undefined); // a reset shows as 'close'
  socket.on('close', () => {
    closed = true;
    wake();
  });
  const changed = () => new Promise<void>((resolve) => waiters.push(resolve));
  return {
    get closed() {
      return closed;
    },
    write: (data: string | Buffer) => new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve()))),
    /** The next whole response (status, lower-cased headers, body), or null if the connection closed first. */
    async response(): Promise<{ status: number; headers: Record<string, string>; body: string } | null> {
      for (;;) {
        const end = received.indexOf('\r\n\r\n');
        if (end >= 0) {
          const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
          const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
          const length = Number(headers['content-length']);
          if (received.length >= end + 4 + length) {
            const body = received.subarray(end + 4, end + 4 + length).toString('utf8');
            received = received.subarray(end + 4 + length);
            return { status: Number(statusLine.split(' ')[1]), headers, body };
          }
        }
        if (closed) return null;
        await changed();
      }
    },
    untilClosed: () => (closed ? Promise.resolve() : new Promise<void>((resolve) => socket.once('close', () => resolve()))),
    destroy: () => socket.destroy(),
  };
}
