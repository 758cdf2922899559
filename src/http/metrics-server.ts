// The metrics listener (METRICS_PORT): GET /metrics in Prometheus's text exposition format, on a
// port of its own so that it can be kept off the network the API is served on (a scraper inside
// the cluster, no token). Anything else is 404; a scrape that fails (the store unreachable for the
// queue gauges), or one before the service has started, is 503 with one line saying why.
import http from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../log';

/** `registryOf()`: the service's registry, null until the service has started (the port is opened first). */
export function createMetricsServer(registryOf: () => Registry | null, logger: Logger): http.Server {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    const registry = registryOf();
    if (!registry) {
      res.writeHead(503, { 'Content-Type': 'text/plain' }).end('metrics unavailable: the service is starting\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        logger.warn({ err }, 'metrics scrape failed');
        res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`metrics unavailable: ${(err as Error).message}\n`);
      },
    );
  });
  // A scraper is one client on a private network: no keep-alive to hold, short timeouts.
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  server.maxConnections = 64;
  return server;
}
