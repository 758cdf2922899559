// The service's Prometheus metrics (prom-client), served at GET /metrics on their own listener
// (METRICS_PORT: http/metrics-server.ts). Every layer records through the Metrics interface, so the
// layers need not know prom-client. No label carries a tenant's id, a document's id or any user
// text: labels are operationIds, status classes, run kinds, sources and statuses, store method
// names and fixed outcome words (docs/operations.md lists them).
import client from 'prom-client';
import { LabelledHistogram, type Series } from './metric-series';

export interface ActiveRuns {
  queued: number;
  running: number;
}

export interface Metrics {
  /** The registry to expose (absent: metrics are off). */
  readonly registry: client.Registry | null;
  /** An answered request: its operationId (or `mcp`, `webhook`, `unmatched`, `other`), status and duration. */
  httpRequest(operation: string, status: number, seconds: number): void;
  /** A run start asked for: queued, or refused (no credits). */
  runAccepted(kind: string, source: string, outcome: 'queued' | 'refused'): void;
  /** A worker began executing a run; `queuedSeconds` when it is the run's first start. */
  runStarted(kind: string, source: string, queuedSeconds: number | null): void;
  /** A run ended (or parked for approval) after `seconds` of execution here. */
  runFinished(kind: string, source: string, status: string, seconds: number): void;
  /** A schedule or poll fired `lagSeconds` after its due time. */
  scheduleFired(lagSeconds: number): void;
  /** A webhook delivery's outcome: `queued`, `repeated`, `refused`, `rate_limited`, `unauthorized`, `unknown_url`, `retired_url`, `invalid`, `error`. */
  webhookDelivery(outcome: string): void;
  /** An event stream opened (+1) or closed (-1). */
  streamsOpen(delta: 1 | -1): void;
  /** A store method's duration. */
  storeCall(method: string, seconds: number): void;
  /** A request refused by a rate limit (`limit`: its name, e.g. `webhook`, `event_streams`). */
  rateLimited(limit: string): void;
}

const noop = () => undefined;

/** Metrics off: every record is a no-op. */
export const NO_METRICS: Metrics = {
  registry: null,
  httpRequest: noop,
  runAccepted: noop,
  runStarted: noop,
  runFinished: noop,
  scheduleFired: noop,
  webhookDelivery: noop,
  streamsOpen: noop,
  storeCall: noop,
  rateLimited: noop,
};

const PREFIX = 'build_api_';

/** Request durations: a read takes a millisecond, a write a few, a wait up to a minute. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60];
/** Runs and their queue waits: from a fraction of a second to the longest run allowed. */
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2];
const LAG_BUCKETS = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900];

// Long because it declares every series of the service in one place, each beside its help text.
export function createMetrics(opts: { activeRuns: () => Promise<ActiveRuns>; defaultMetrics?: boolean }): Metrics {
  const registry = new client.Registry();
  if (opts.defaultMetrics !== false) client.collectDefaultMetrics({ register: registry, prefix: PREFIX });
  const registers = [registry];
  // The hot paths (every request, every store call): series looked up once, counts read at scrape time.
  const requests = new LabelledHistogram(
    `${PREFIX}http_request_duration_seconds`,
    "Time from a request's arrival to its reply, by operationId and status class.",
    ['operation', 'status_class'],
    HTTP_BUCKETS,
  );
  requests.register(registry, { name: `${PREFIX}http_requests_total`, help: 'Requests answered, by operationId and status class.' });
  const storeCalls = new LabelledHistogram(`${PREFIX}store_call_duration_seconds`, "Duration of the store's methods, by method.", ['method'], STORE_BUCKETS);
  storeCalls.register(registry);
  const accepted = new client.Counter({
    name: `${PREFIX}runs_accepted_total`,
    help: 'Run starts asked for, by kind, source and outcome (queued, or refused for lack of credits).',
    labelNames: ['kind', 'source', 'outcome'],
    registers,
  });
  const started = new client.Counter({
    name: `${PREFIX}runs_started_total`,
    help: "Executions begun by this process's workers, by kind and source (a run resumed after an approval starts again).",
    labelNames: ['kind', 'source'],
    registers,
  });
  const finished = new client.Counter({
    name: `${PREFIX}runs_finished_total`,
    help: "Executions ended by this process's workers, by kind, source and status (awaiting_approval: parked).",
    labelNames: ['kind', 'source', 'status'],
    registers,
  });
  const runSeconds = new client.Histogram({
    name: `${PREFIX}run_duration_seconds`,
    help: 'Execution time of a run in a worker, by kind and status.',
    labelNames: ['kind', 'status'],
    buckets: RUN_BUCKETS,
    registers,
  });
  const queueWait = new client.Histogram({
    name: `${PREFIX}run_queue_wait_seconds`,
    help: "Time from a run's acceptance to its first start, by kind.",
    labelNames: ['kind'],
    buckets: RUN_BUCKETS,
    registers,
  });
  const lag = new client.Histogram({
    name: `${PREFIX}schedule_lag_seconds`,
    help: 'How late schedules and polls fired: the fire time minus the due time.',
    buckets: LAG_BUCKETS,
    registers,
  });
  const deliveries = new client.Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: 'Webhook deliveries, by outcome.',
    labelNames: ['outcome'],
    registers,
  });
  const streams = new client.Gauge({ name: `${PREFIX}event_streams_open`, help: 'Run event streams (and run waits) open on this process.', registers });
  const limited = new client.Counter({
    name: `${PREFIX}rate_limited_total`,
    help: 'Requests refused by a rate limit (429), by limit.',
    labelNames: ['limit'],
    registers,
  });
  // Read from the store at each scrape: every replica reports the shared queue.
  new client.Gauge({
    name: `${PREFIX}runs_active`,
    help: 'Runs queued and executing now, across every process on the store, by state.',
    labelNames: ['state'],
    registers,
    async collect() {
      const { queued, running } = await opts.activeRuns();
      this.set({ state: 'queued' }, queued);
      this.set({ state: 'running' }, running);
    },
  });

  const requestSeries = new Map<string, Series>();
  const storeSeries = new Map<string, Series>();

  return {
    registry,
    httpRequest(operation, status, seconds) {
      const key = `${operation} ${status}`;
      let series = requestSeries.get(key);
      if (!series) requestSeries.set(key, (series = requests.series(operation, `${Math.floor(status / 100)}xx`)));
      requests.observe(series, seconds);
    },
    runAccepted: (kind, source, outcome) => accepted.inc({ kind, source, outcome }),
    runStarted(kind, source, queuedSeconds) {
      started.inc({ kind, source });
      if (queuedSeconds !== null) queueWait.observe({ kind }, Math.max(0, queuedSeconds));
    },
    runFinished(kind, source, status, seconds) {
      finished.inc({ kind, source, status });
      runSeconds.observe({ kind, status }, seconds);
    },
    scheduleFired: (lagSeconds) => lag.observe(Math.max(0, lagSeconds)),
    webhookDelivery: (outcome) => deliveries.inc({ outcome }),
    streamsOpen: (delta) => streams.inc(delta),
    storeCall(method, seconds) {
      let series = storeSeries.get(method);
      if (!series) storeSeries.set(method, (series = storeCalls.series(method)));
      storeCalls.observe(series, seconds);
    },
    rateLimited: (limit) => limited.inc({ limit }),
  };
}
