// A Map bounded by the bytes its values hold, as `sizeOf` counts them: setting a value makes the
// entries set longest ago go until the map is within its budget again. For the store's caches whose
// entries can always be read again from the table (lists, recent runs), so an eviction is never wrong.
export class BudgetedMap<K, V> {
  private readonly entries = new Map<K, V>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  /**
   * Holds `value` under `key`: a new key goes last, a replaced one keeps its place. Then the oldest
   * other entries go until the budget holds. A value larger than the whole budget is not held (and
   * the key's previous value goes).
   */
  set(key: K, value: V): void {
    const size = this.sizeOf(value);
    if (size > this.maxBytes) {
      this.delete(key);
      return;
    }
    const previous = this.entries.get(key);
    this.bytes += size - (previous === undefined ? 0 : this.sizeOf(previous));
    this.entries.set(key, value);
    for (const [oldestKey, oldest] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (oldestKey === key) continue;
      this.entries.delete(oldestKey);
      this.bytes -= this.sizeOf(oldest);
    }
  }

  delete(key: K): void {
    const held = this.entries.get(key);
    if (held === undefined) return;
    this.entries.delete(key);
    this.bytes -= this.sizeOf(held);
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
