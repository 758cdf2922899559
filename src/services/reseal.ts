// A SECRETS_KEY rotation's reseal (secret-box.ts): at start, every stored value sealed with a key
// other than the first is sealed again with the first. One loop serves each kind of sealed value
// (signing keys, connection credentials and tokens, event endpoint secrets): pages of rows by
// position, and one conditional write per value (from the sealed text read to the new one), so
// replicas starting together reseal each value once.
import type { SecretBox } from './secret-box';

const PAGE = 500;

/** One sealed value of a row: its text (null: none), the context it is sealed for, and its conditional replacement. */
export interface SealedValue {
  sealed: string | null;
  context: string;
  replace(from: string, to: string): Promise<boolean>;
}

export interface SealedSource<Row, Position> {
  /** The rows after `after` (null: from the first), in position order, at most `limit`. */
  page(after: Position | null, limit: number): Promise<Row[]>;
  positionOf(row: Row): Position;
  valuesOf(row: Row): SealedValue[];
}

/** Seals again, with the box's first key, every value of `source` sealed with another; how many it replaced. */
export async function resealAll<Row, Position>(source: SealedSource<Row, Position>, box: SecretBox): Promise<number> {
  let resealed = 0;
  for (let after: Position | null = null; ; ) {
    const rows = await source.page(after, PAGE);
    for (const row of rows) {
      for (const { sealed, context, replace } of source.valuesOf(row)) {
        if (sealed === null || box.isCurrent(sealed)) continue;
        if (await replace(sealed, box.seal(box.open(sealed, context), context))) resealed++;
      }
    }
    if (rows.length < PAGE) return resealed;
    after = source.positionOf(rows[rows.length - 1] as Row);
  }
}
