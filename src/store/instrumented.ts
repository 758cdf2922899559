// A store whose every method reports its duration (the store_call_duration_seconds metric), named
// `<repository>.<method>` (`runs.find`, `agents.versions.list`): a bounded set of names, whichever
// adapter is behind it; with tracing on, each call is a span of that name too (`store runs.find`),
// a child of the request's or the run's span. The adapter is not changed: each repository is seen
// through a Proxy that hands out timed copies of its methods, made once per method.
import { activeContext, failed, SpanKind, startSpan, tracingOn } from '../tracing';
import type { Store } from './port';

export type StoreCallObserver = (method: string, seconds: number) => void;

/** `system`: the database's name in the spans (`sqlite`, `postgresql`). */
export function instrumentedStore(store: Store, observe: StoreCallObserver, system = 'sqlite'): Store {
  return timed(store, '', { observe, system }, 0);
}

interface Instruments {
  observe: StoreCallObserver;
  system: string;
}

/** How deep repositories nest (store → runs, store → agents → versions). */
const MAX_DEPTH = 2;

function timed<T extends object>(target: T, prefix: string, instruments: Instruments, depth: number): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      // Read on the adapter's own object (its getters and private fields see it, not the proxy).
      const value = Reflect.get(object, property) as unknown;
      if (typeof property !== 'string') return value;
      const known = wrapped.get(property);
      if (known !== undefined) return known;
      let view: unknown = value;
      if (typeof value === 'function') view = timedMethod(value as (...args: unknown[]) => unknown, object, `${prefix}${property}`, instruments);
      else if (value !== null && typeof value === 'object' && depth < MAX_DEPTH && !Array.isArray(value))
        view = timed(value, `${prefix}${property}.`, instruments, depth + 1);
      else return value; // plain data: read through, never cached
      wrapped.set(property, view);
      return view;
    },
  });
}

function timedMethod(method: (...args: unknown[]) => unknown, self: object, name: string, { observe, system }: Instruments) {
  const spanName = `store ${name}`;
  return function timedCall(...args: unknown[]): unknown {
    const started = performance.now();
    const span = tracingOn()
      ? startSpan(spanName, activeContext(), { kind: SpanKind.CLIENT, attributes: { 'db.system.name': system, 'db.operation.name': name } })
      : null;
    const done = () => {
      observe(name, (performance.now() - started) / 1000);
      span?.end();
    };
    const result = method.apply(self, args);
    if (result instanceof Promise) {
      // Observed beside the caller's own reaction: the caller gets the adapter's promise itself.
      result.then(done, (err: unknown) => {
        if (span) failed(span, err);
        done();
      });
      return result;
    }
    done();
    return result;
  };
}
