// Loaded into a service the bench compares (`node --require`): answers the bench's 'cpu-usage'
// message with the process's own process.cpuUsage() (user + system, µs), a finer and steadier
// figure than requests/s on a machine whose load generator shares the cores.
'use strict';

process.on('message', (message) => {
  if (message === 'cpu-usage') {
    const { user, system } = process.cpuUsage();
    process.send({ cpuMicros: user + system });
  }
});
// The channel must not keep the service alive: it stops as it would without the probe.
if (process.channel) process.channel.unref();
