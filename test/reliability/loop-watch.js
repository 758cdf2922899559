// Loaded into a server process the reliability suite watches (`node --require`): it measures the
// event loop's delay (perf_hooks.monitorEventLoopDelay) and the process's resident memory, and
// answers the test's 'loop-stats' message with what it saw since the last one: a request that
// blocked the loop shows as a delay as long as the block, whatever else the test sees. The message
// 'loop-stats-collected' first runs a full garbage collection: the RSS it reports is then what the
// process keeps, not garbage a collection has yet to reclaim.
'use strict';
const { monitorEventLoopDelay } = require('node:perf_hooks');
const v8 = require('node:v8');
const vm = require('node:vm');

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc');

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
let peakRss = process.memoryUsage().rss;
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 25).unref();

process.on('message', (message) => {
  if (message !== 'loop-stats' && message !== 'loop-stats-collected') return;
  if (message === 'loop-stats-collected') collectGarbage();
  const rss = process.memoryUsage().rss;
  process.send({ maxDelayMs: histogram.max / 1e6, p99DelayMs: histogram.percentile(99) / 1e6, rss, peakRss: Math.max(peakRss, rss) });
  histogram.reset();
  peakRss = rss;
});
// The channel must not keep the server alive: it stops as it would without the watcher.
if (process.channel) process.channel.unref();
