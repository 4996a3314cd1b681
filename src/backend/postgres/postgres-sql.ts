import { createHash } from "node:crypto";

/** A named SQL statement: prepared once per connection under `name`. */
export interface Sql {
  name: string;
  text: string;
}

/**
 * A named statement for `text`. The name is a digest of the text, so backends on different
 * schemas can share a pool without their statements colliding.
 */
export function sql(text: string): Sql {
  return { name: `cairn_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text };
}
