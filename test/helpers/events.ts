// A minimal server-sent-events client over node:http: it parses `id:`, `event:`, `data:` and comment
// lines as the EventSource algorithm does, and can stop after N events, after a time, or at the end.
import http from 'node:http';

export interface ParsedEvent {
  id: number;
  event: string;
  data: unknown;
}

export interface StreamRead {
  status: number;
  contentType: string | undefined;
  events: ParsedEvent[];
  /** Comment lines (`: …`) seen: the keep-alives. */
  comments: number;
  /** Whether the server ended the stream (rather than the client leaving). */
  ended: boolean;
}

export function readEventStream(url: string, token: string, opts: { lastEventId?: number; stopAfter?: number; forMs?: number } = {}): Promise<StreamRead> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
    if (opts.lastEventId !== undefined) headers['Last-Event-ID'] = String(opts.lastEventId);
    const req = http.get(url, { headers }, (res) => {
      const read: StreamRead = { status: res.statusCode as number, contentType: res.headers['content-type'], events: [], comments: 0, ended: false };
      let buffer = '';
      let current: Partial<ParsedEvent> = {};
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        resolve(read);
      };
      const timer = setTimeout(done, opts.forMs ?? 30_000);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (current.id !== undefined) read.events.push(current as ParsedEvent);
            current = {};
            if (opts.stopAfter !== undefined && read.events.length >= opts.stopAfter) return done();
          } else if (line.startsWith(':')) read.comments++;
          else if (line.startsWith('id: ')) current.id = Number(line.slice(4));
          else if (line.startsWith('event: ')) current.event = line.slice(7);
          else if (line.startsWith('data: ')) current.data = JSON.parse(line.slice(6));
        }
      });
      res.on('end', () => {
        read.ended = true;
        done();
      });
      res.on('error', () => done());
    });
    req.on('error', (err) => reject(err));
  });
}
