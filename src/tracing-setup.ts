// The OpenTelemetry SDK (the 2.x line, which supports Node 20, 22 and 24), set up from the standard
// OTEL_* variables at `build-api serve`. Off unless an exporter is configured: OTEL_TRACES_EXPORTER
// is `otlp` or `console`, or (OTEL_TRACES_EXPORTER unset) an OTLP endpoint is set. OTLP goes over
// HTTP, as protobuf (`http/protobuf`, the default) or JSON (`http/json`), per
// OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL; the exporters read the endpoint, headers, timeout and
// compression themselves, the batch processor OTEL_BSP_*, and the provider OTEL_TRACES_SAMPLER[_ARG].
// The service's name is `build-api` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say
// otherwise.
// The SDK itself (tracing-sdk.ts) is loaded only when tracing is on: a service that does not trace
// does not spend its start-up loading it.
import { ConfigError } from './config';
import type { ExporterKind } from './tracing-sdk';

type Env = Record<string, string | undefined>;

export interface TracingSetup {
  /** What is exported where, for the start-up log line (no headers: they may carry credentials). */
  describe: string;
  /** Exports the spans still buffered and stops. */
  shutdown(): Promise<void>;
}

/** The exporter OTEL_* configure, or null when tracing is off. */
function exporterOf(env: Env): { kind: ExporterKind; describe: string } | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const kind = named || (endpoint ? 'otlp' : 'none');
  if (kind === 'none') return null;
  if (kind === 'console') return { kind: 'console', describe: 'console' };
  if (kind !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER: must be otlp, console or none, got '${kind}'`);
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  const where = withoutCredentials(endpoint || 'http://localhost:4318');
  if (protocol === 'http/protobuf') return { kind: 'otlp-protobuf', describe: `otlp http/protobuf to ${where}` };
  if (protocol === 'http/json') return { kind: 'otlp-json', describe: `otlp http/json to ${where}` };
  throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json (grpc is not supported), got '${protocol}'`);
}

/** An endpoint as the start-up line may show it: a user and password in the URL are left out. */
export function withoutCredentials(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return '(an endpoint that is not a URL)';
  }
}

/** Starts the SDK when OTEL_* configure an exporter; null when tracing is off. */
export function startTracing(env: Env = process.env, version = 'unknown'): TracingSetup | null {
  const chosen = exporterOf(env);
  if (!chosen) return null;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startSdk } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  return { describe: chosen.describe, shutdown: startSdk(chosen.kind, version) };
}
