// The HTTP server builds requests and responses with the express app's prototypes, so express's
// per-request Object.setPrototypeOf changes nothing (src/http/server.ts).
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { appMessageClasses, createHttpServer, KEEP_ALIVE_TIMEOUT_MS } from '../../src/http/server';

function appWithRoute() {
  const app = express();
  app.get('/hello', (req, res) => {
    res.json({ hello: req.query.name ?? 'world', path: req.path });
  });
  return app;
}

/** Serves one GET on `server` and counts the prototype changes (Object.setPrototypeOf to another prototype) made meanwhile. */
async function serveOnce(server: http.Server): Promise<{ status: number; body: unknown; prototypeChanges: number }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const original = Object.setPrototypeOf;
  let prototypeChanges = 0;
  Object.setPrototypeOf = (target: object, proto: object | null) => {
    if (Object.getPrototypeOf(target) !== proto) prototypeChanges++;
    return original(target, proto);
  };
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hello?name=build`);
    return { status: res.status, body: await res.json(), prototypeChanges };
  } finally {
    Object.setPrototypeOf = original;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

test('requests and responses are built as node builds them, under the app prototypes', () => {
  const app = appWithRoute();
  const classes = appMessageClasses(app)!;
  expect(classes).not.toBeNull();
  const socket = new net.Socket();
  const req = new classes.IncomingMessage(socket);
  expect(Object.getPrototypeOf(req)).toBe(app.request);
  expect(req).toBeInstanceOf(http.IncomingMessage);
  expect(req.socket).toBe(socket);
  expect(req.complete).toBe(false);
  const res = new classes.ServerResponse(req);
  expect(Object.getPrototypeOf(res)).toBe(app.response);
  expect(res).toBeInstanceOf(http.ServerResponse);
  expect(res.statusCode).toBe(200);
  socket.destroy();
});

test("express changes no request's or response's prototype on this server (it changes both on a default one)", async () => {
  const ours = await serveOnce(createHttpServer(appWithRoute()));
  expect(ours).toEqual({ status: 200, body: { hello: 'build', path: '/hello' }, prototypeChanges: 0 });
  const standard = await serveOnce(http.createServer(appWithRoute()));
  expect(standard).toEqual({ status: 200, body: { hello: 'build', path: '/hello' }, prototypeChanges: 2 });
});

test("an idle keep-alive connection outlives a load balancer's 60 s and is never answered 408 before it closes", () => {
  const server = createHttpServer(appWithRoute());
  expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);
  expect(server.keepAliveTimeout).toBeGreaterThan(60_000);
  // node times the headers of the next request from the moment a keep-alive connection goes idle.
  expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout);
});

describe('connection limits', () => {
  async function listening(limits: Parameters<typeof createHttpServer>[1]) {
    const server = createHttpServer(appWithRoute(), limits);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as AddressInfo).port };
  }
  /** A raw connection: what it received, and when it was closed (ms after it opened), or null. */
  function connect(port: number, send: string) {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - started)));
    socket.on('data', (d) => (received += d));
    socket.on('error', () => undefined);
    socket.write(send);
    return { socket, closed, received: () => received };
  }

  test('a request whose headers never end is answered 408 and closed once the request timeout passes', async () => {
    const { server, port } = await listening({ maxConnections: 100, requestTimeoutMs: 1000, idleTimeoutMs: 60_000 });
    try {
      const slow = connect(port, 'GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      const afterMs = await slow.closed;
      expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
      expect(afterMs).toBeGreaterThanOrEqual(900);
      expect(afterMs).toBeLessThan(5000);
    } finally {
      server.close();
    }
  });

  test('a connection silent both ways is closed after the idle timeout; a busy one is not', async () => {
    const { server, port } = await listening({ maxConnections: 100, requestTimeoutMs: 60_000, idleTimeoutMs: 1000 });
    try {
      const silent = connect(port, '');
      expect(await silent.closed).toBeLessThan(5000);
      const res = await fetch(`http://127.0.0.1:${port}/hello`);
      expect(res.status).toBe(200);
    } finally {
      server.close();
    }
  });

  test('connections beyond the maximum are closed at once; those within it are served', async () => {
    const { server, port } = await listening({ maxConnections: 2, requestTimeoutMs: 60_000, idleTimeoutMs: 60_000 });
    try {
      const held = [connect(port, ''), connect(port, '')];
      await new Promise((r) => setTimeout(r, 200));
      const third = connect(port, 'GET /hello HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await third.closed).toBeLessThan(2000);
      expect(third.received()).toBe('');
      for (const h of held) h.socket.destroy();
      await Promise.all(held.map((h) => h.closed));
      await new Promise((r) => setTimeout(r, 100));
      expect((await fetch(`http://127.0.0.1:${port}/hello`)).status).toBe(200);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
