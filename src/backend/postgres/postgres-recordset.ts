import type { RUN_COLUMNS } from "../rows/run-rows.ts";
import type { SIGNAL_COLUMNS } from "../rows/signal-rows.ts";
import type { WAIT_COLUMNS } from "../rows/wait-rows.ts";

/**
 * Batch writes send each part (runs, transitions, waits, signals) as one JSON parameter, an array
 * of objects keyed by column name ({@link recordsetJson}), read back by `json_to_recordset`
 * ({@link recordset}) with each column's type.
 */

/** A column's type, for the `recordset` of a batch write. JSON travels as text and is cast back. */
export type ColumnType = "text" | "integer" | "bigint" | "boolean" | "json";

export const RUN_TYPES: Record<(typeof RUN_COLUMNS)[number], ColumnType> = {
  id: "text",
  agent: "text",
  workflow: "text",
  run_key: "text",
  state: "text",
  paused_reason: "text",
  input: "json",
  output: "json",
  error: "json",
  epoch: "integer",
  lease_owner: "text",
  lease_expires_at: "bigint",
  recoveries: "integer",
  last_transition_id: "integer",
  versions: "json",
  meta: "json",
  parent_run_id: "text",
  parent_close_policy: "text",
  stop_request: "json",
  continued_from: "text",
  continued_to: "text",
  usage: "json",
  acceptance: "json",
  forked_from: "json",
  forks: "json",
  concurrency_key: "text",
  concurrency_limit: "integer",
  priority: "integer",
  created_at: "bigint",
  updated_at: "bigint",
};

export const TRANSITION_TYPES: ColumnType[] = [
  "text",
  "integer",
  "bigint",
  "text",
  "text",
  "text",
  "text",
  "text",
  "text",
  "json",
];

export const WAIT_TYPES: Record<(typeof WAIT_COLUMNS)[number], ColumnType> = {
  run_id: "text",
  id: "text",
  seq: "integer",
  kind: "text",
  name: "text",
  status: "text",
  details: "json",
  due_at: "bigint",
  resolution: "json",
  created_at: "bigint",
};

export const SIGNAL_TYPES: Record<(typeof SIGNAL_COLUMNS)[number], ColumnType> = {
  run_id: "text",
  message_id: "text",
  name: "text",
  payload: "json",
  received_at: "bigint",
  consumed_by: "text",
};

/**
 * `json_to_recordset` over the JSON parameter `$first` (an array of objects keyed by column name,
 * `recordsetJson`): the FROM item (aliased `x`), per column the expression that reads it back with
 * its type, and the number of the next parameter. A JSON column travels as its text and is cast
 * back, so that JSON `null` stays apart from SQL NULL.
 */
export function recordset(
  columns: readonly string[],
  types: readonly ColumnType[],
  first: number,
): { from: string; values: string[]; next: number } {
  const definitions = columns.map((c, i) => `${c} ${types[i] === "json" ? "text" : types[i]}`);
  return {
    from: `json_to_recordset($${first}::json) AS x (${definitions.join(", ")})`,
    values: columns.map((c, i) => (types[i] === "json" ? `x.${c}::json` : `x.${c}`)),
    next: first + 1,
  };
}

/**
 * Rows (each a list of column values, in `columns` order) as the JSON text of an array of objects
 * keyed by column name: the parameter `json_to_recordset` reads back (see {@link recordset}). One
 * JSON text rather than one array per column: `JSON.stringify` is
 * native, where pg escapes the elements of each text array one by one. `undefined` and `null`
 * are SQL NULL; a JSON column's value is its JSON text.
 */
export function recordsetJson(rows: readonly (readonly unknown[])[], columns: readonly string[]): string {
  return JSON.stringify(rows.map((row) => keyedBy(columns, row)));
}

/** A row's values as an object keyed by column name (`undefined` leaves the key out of JSON). */
function keyedBy(columns: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) record[columns[i] as string] = values[i];
  return record;
}
