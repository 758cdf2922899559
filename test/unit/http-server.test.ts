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

test('an idle keep-alive connection outlives a load balancer\'s 60 s and is never answered 408 before it closes', () => {
  const server = createHttpServer(appWithRoute());
  expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);
  expect(server.keepAliveTimeout).toBeGreaterThan(60_000);
  // node times the headers of the next request from the moment a keep-alive connection goes idle.
  expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout);
});
