// A store whose every method reports its duration (the store_call_duration_seconds metric), named
// `<repository>.<method>` (`runs.find`, `agents.versions.list`): a bounded set of names, whichever
// adapter is behind it. The adapter is not changed: each repository is seen through a Proxy that
// hands out timed copies of its methods, made once per method.
import type { Store } from './port';

export type StoreCallObserver = (method: string, seconds: number) => void;

export function instrumentedStore(store: Store, observe: StoreCallObserver): Store {
  return timed(store, '', observe, 0);
}

/** How deep repositories nest (store → runs, store → agents → versions). */
const MAX_DEPTH = 2;

function timed<T extends object>(target: T, prefix: string, observe: StoreCallObserver, depth: number): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      // Read on the adapter's own object (its getters and private fields see it, not the proxy).
      const value = Reflect.get(object, property) as unknown;
      if (typeof property !== 'string') return value;
      const known = wrapped.get(property);
      if (known !== undefined) return known;
      let view: unknown = value;
      if (typeof value === 'function') view = timedMethod(value as (...args: unknown[]) => unknown, object, `${prefix}${property}`, observe);
      else if (value !== null && typeof value === 'object' && depth < MAX_DEPTH && !Array.isArray(value)) view = timed(value, `${prefix}${property}.`, observe, depth + 1);
      else return value; // plain data: read through, never cached
      wrapped.set(property, view);
      return view;
    },
  });
}

function timedMethod(method: (...args: unknown[]) => unknown, self: object, name: string, observe: StoreCallObserver) {
  return function timedCall(...args: unknown[]): unknown {
    const started = performance.now();
    const done = () => observe(name, (performance.now() - started) / 1000);
    const result = method.apply(self, args);
    if (result instanceof Promise) {
      // Observed beside the caller's own reaction: the caller gets the adapter's promise itself.
      result.then(done, done);
      return result;
    }
    done();
    return result;
  };
}
