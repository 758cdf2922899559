#!/usr/bin/env node
// A baseline server for npm run bench: answers every request with the same bytes from memory, with
// no auth, validation or store. `http` is bare node:http (the practical limit of the machine);
// `express` is a bare express app with one route (the floor of the framework the service uses), on
// a default node server; `express-prototypes` is the same app on the server the service uses, which
// builds requests and responses with the app's prototypes (dist/src/http/server.js).
'use strict';
const http = require('node:http');
const fs = require('node:fs');

const [mode, bodyFile] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile);
const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };

let server;
if (mode === 'http') {
  server = http.createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
} else if (mode === 'express' || mode === 'express-prototypes') {
  const express = require('express');
  const app = express();
  app.set('etag', false);
  app.get('/api/build/agents/:ref', (_req, res) => {
    res.set(headers).send(body);
  });
  server = mode === 'express' ? http.createServer(app) : require('../dist/src/http/server.js').createHttpServer(app);
} else {
  throw new Error(`unknown baseline ${mode}`);
}
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
