// The size of a JSON value as text, measured without writing the text and without recursion, and
// given up as soon as it passes a limit: what measuring costs is bounded by the limit, whatever the
// value (a value that shares one object many times can be small in memory and huge as text).

/** UTF-8 bytes of `value` as JSON (escapes inside strings not counted), or null when over `limit`. */
export function jsonBytesWithin(value: unknown, limit: number): number | null {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length) {
    const v = pending.pop();
    if (typeof v === 'string') total += Buffer.byteLength(v) + 2;
    else if (typeof v === 'number' || typeof v === 'boolean') total += String(v).length;
    else if (v === null || v === undefined) total += 4;
    else if (Array.isArray(v)) {
      total += 2 + Math.max(0, v.length - 1);
      // A huge array of small members: its members are counted one by one, but never more than fit.
      if (total + v.length > limit) return null;
      for (let i = v.length - 1; i >= 0; i--) pending.push(v[i]);
    } else if (typeof v === 'object') {
      const keys = Object.keys(v);
      total += 2 + Math.max(0, keys.length - 1);
      if (total + keys.length * 4 > limit) return null;
      for (const key of keys) {
        total += Buffer.byteLength(key) + 3;
        pending.push((v as Record<string, unknown>)[key]);
      }
    } else total += 4; // functions and symbols: never in run data; counted as null
    if (total > limit) return null;
  }
  return total;
}
