// Loaded into a server process the reliability suite watches (`node --require`): it measures the
// event loop's delay (perf_hooks.monitorEventLoopDelay) and the process's resident memory, and
// answers the test's 'loop-stats' message with what it saw since the last one: a request that
// blocked the loop shows as a delay as long as the block, whatever else the test sees.
'use strict';
const { monitorEventLoopDelay } = require('node:perf_hooks');

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
let peakRss = process.memoryUsage().rss;
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 25).unref();

process.on('message', (message) => {
  if (message !== 'loop-stats') return;
  const rss = process.memoryUsage().rss;
  process.send({ maxDelayMs: histogram.max / 1e6, p99DelayMs: histogram.percentile(99) / 1e6, rss, peakRss: Math.max(peakRss, rss) });
  histogram.reset();
  peakRss = rss;
});
// The channel must not keep the server alive: it stops as it would without the watcher.
if (process.channel) process.channel.unref();
