// Tracing through the OpenTelemetry API: spans for requests, runs, steps, tool and model calls and
// store calls, and the W3C trace context carried to outgoing calls and stored with queued runs. The
// SDK is set up (or not) by the composition root (tracing-setup.ts); without it, `tracingOn` is false
// and the code paths here are skipped rather than asked to make spans no one records.
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';

export { SpanKind, SpanStatusCode };

const tracer = () => trace.getTracer('build-api');

let on = false;

/** What `inSpan` hands `fn` when tracing is off: a span that records nothing. */
const NOT_RECORDED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether spans are recorded: set once, by the composition root, when an exporter is configured. */
export const tracingOn = (): boolean => on;

export function setTracingOn(value: boolean): void {
  on = value;
}

/** `fn` inside a span named `name` (a child of the active one), ended when `fn` settles; an error marks it failed. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!on) return fn(NOT_RECORDED);
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** `fn`, whose outcome is `{ ok }` or `{ ok: false, error }`, inside a span that a failed outcome marks failed. */
export function inOutcomeSpan<T extends { ok: boolean; error?: string }>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!on) return fn();
  return inSpan(name, attributes, async (span) => {
    const outcome = await fn();
    if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
    return outcome;
  });
}

/**
 * `fn` inside the span of a run a worker executes: a child of the trace that queued it (the stored
 * `traceparent`, whichever process queued it) and linked to it, or a new trace when none was
 * stored. `fn` returns the run's status, which the span records.
 */
export async function inRunSpan(name: string, traceparent: string | null, attributes: Attributes, fn: () => Promise<string>): Promise<string> {
  if (!on) return fn();
  const parent = contextFromTraceparent(traceparent);
  const queuedBy = trace.getSpanContext(parent);
  const span = startSpan(name, parent, { kind: SpanKind.CONSUMER, attributes, links: queuedBy ? [{ context: queuedBy }] : [] });
  try {
    const status = await withSpan(parent, span, fn);
    span.setAttribute('build.run.status', status);
    if (status === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: 'the run failed' });
    return status;
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks `span` failed with `err`'s message. */
export function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  if (err instanceof Error) span.recordException(err);
}

/** A span begun now in `parent` (which it does not make active): the caller ends it. */
export function startSpan(name: string, parent: Context, opts: { kind?: SpanKind; attributes?: Attributes; links?: Link[] } = {}): Span {
  return tracer().startSpan(name, opts, parent);
}

/** The trace context of incoming request headers (`traceparent`, `tracestate`): the parent of the request's span. */
export const contextFromHeaders = (headers: Record<string, unknown>): Context => propagation.extract(ROOT_CONTEXT, headers);

/** Adds the active trace context to outgoing request `headers` (`traceparent`, `tracestate`), when tracing. */
export function injectTraceContext(headers: Record<string, string>): void {
  if (on) propagation.inject(context.active(), headers);
}

/** The active span's context as a `traceparent` value (kept with a queued run), or null. */
export function activeTraceparent(): string | null {
  if (!on) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a stored `traceparent` names (a run's span is its child, and links to it). */
export function contextFromTraceparent(traceparent: string | null): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** The active context: a new span's parent. */
export const activeContext = (): Context => context.active();

/** `fn` with `span` active. */
export const withSpan = <T>(parent: Context, span: Span, fn: () => T): T => context.with(trace.setSpan(parent, span), fn);

/** The active span's ids for a log line (trace_id, span_id), or undefined. */
export function activeSpanIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
