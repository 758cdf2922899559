// A pure function's results remembered for a bounded number of distinct arguments. Callers choose
// the arguments (any string in a document), so an unbounded cache would grow with every request;
// this one forgets the oldest argument once it is full. Pure otherwise: no timers, no I/O.

export interface BoundedMemo<R> {
  (key: string): R;
  /** Arguments remembered now (never more than `max`). */
  readonly size: number;
}

export function boundedMemo<R>(fn: (key: string) => R, max: number): BoundedMemo<R> {
  const results = new Map<string, R>();
  const memo = (key: string): R => {
    if (results.has(key)) return results.get(key) as R;
    const result = fn(key);
    if (results.size >= max) results.delete(results.keys().next().value as string);
    results.set(key, result);
    return result;
  };
  return Object.defineProperty(memo, 'size', { get: () => results.size }) as BoundedMemo<R>;
}
