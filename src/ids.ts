// Time-ordered UUIDs (version 7, RFC 9562 §5.7) for rows that are inserted all the time, such as
// runs: a random (version 4) primary key puts each insert on a random page of the key's index, so
// every commit would rewrite pages all over it; keys that grow with time append at its right edge
// (docs/benchmarks.md). 48 bits of Unix milliseconds, then 74 random bits; the id is still only a
// name — who may read a run is decided by its workspace and starter, never by knowing its id.
import { randomFillSync } from 'node:crypto';

const POOL_IDS = 256;
const pool = Buffer.alloc(16 * POOL_IDS);
let next = POOL_IDS; // the pool is filled on first use

export function uuidV7(nowMs: number = Date.now()): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const bytes = pool.subarray(16 * next, 16 * ++next);
  bytes.writeUIntBE(nowMs, 0, 6);
  bytes[6] = 0x70 | ((bytes[6] as number) & 0x0f); // version 7
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f); // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A UUID in its text form (any version), as ids of documents and runs are. */
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(ref: string): boolean {
  return UUID_RE.test(ref);
}
