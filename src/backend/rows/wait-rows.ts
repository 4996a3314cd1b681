import type { Json, WaitKind, WaitRecord, WaitResolution } from "../../core/records.ts";
import { decode, encode } from "./json-columns.ts";

/** A `waits` row. */
export interface WaitRow {
  run_id: string;
  id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  details: string;
  due_at: number | null;
  resolution: string | null;
  created_at: number;
}

/** Columns of a `waits` row in table order. */
export const WAIT_COLUMNS = [
  "run_id",
  "id",
  "seq",
  "kind",
  "name",
  "status",
  "details",
  "due_at",
  "resolution",
  "created_at",
] as const;

/** The values of {@link WAIT_COLUMNS} for a wait. */
export function waitValues(wait: WaitRecord): unknown[] {
  return [
    wait.runId,
    wait.id,
    wait.seq,
    wait.kind,
    wait.name,
    wait.status,
    JSON.stringify(wait.details),
    wait.dueAt,
    encode(wait.resolution),
    wait.createdAt,
  ];
}

/** The record of a `waits` row. */
export function rowToWait(row: WaitRow): WaitRecord {
  return {
    runId: row.run_id,
    id: row.id,
    seq: row.seq,
    kind: row.kind as WaitKind,
    name: row.name,
    status: row.status as WaitRecord["status"],
    details: JSON.parse(row.details) as Json,
    dueAt: row.due_at,
    resolution: decode<WaitResolution>(row.resolution),
    createdAt: row.created_at,
  };
}
