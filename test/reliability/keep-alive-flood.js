// A load generator in a process of its own (so the test's own event loop, timing /healthz, is not
// the one busy sending): `node keep-alive-flood.js <options JSON>` sends `amount` requests over
// `connections` keep-alive connections with autocannon, each connection cycling through `requests`,
// and prints one JSON line: the requests sent, the count of each status, errors and timeouts.
'use strict';
const autocannon = require('autocannon');

const { url, connections, amount, requests } = JSON.parse(process.argv[2]);
autocannon({ url, connections, amount, pipelining: 1, requests, timeout: 10 }, (err, result) => {
  if (err) throw err;
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]));
  process.stdout.write(`${JSON.stringify({ sent: result.requests.sent, statuses, errors: result.errors, timeouts: result.timeouts })}\n`);
});
