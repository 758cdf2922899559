// The OpenTelemetry SDK's part of tracing-setup.ts, loaded by it only when tracing is on: the
// exporter it chose, the service's resource, a batch processor, W3C propagation.
import { W3CBaggagePropagator, W3CTraceContextPropagator, CompositePropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { setTracingOn } from './tracing';

export type ExporterKind = 'console' | 'otlp-protobuf' | 'otlp-json';

function exporter(kind: ExporterKind): SpanExporter {
  if (kind === 'console') return new ConsoleSpanExporter();
  return kind === 'otlp-protobuf' ? new OtlpProtobufExporter() : new OtlpJsonExporter();
}

/** Registers the tracer provider and turns tracing on; the function returned exports what is buffered and stops. */
export function startSdk(kind: ExporterKind, version: string): () => Promise<void> {
  // The service's own name and version, unless the environment names them (its attributes win).
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'build-api', 'service.version': version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter(kind))] });
  provider.register({ propagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }) });
  setTracingOn(true);
  return async () => {
    setTracingOn(false);
    await provider.shutdown();
  };
}
