import type { Json, SignalRecord } from "../../core/records.ts";

/** A `signals` row. */
export interface SignalRow {
  run_id: string;
  message_id: string;
  name: string;
  payload: string;
  received_at: number;
  consumed_by: string | null;
}

/** Columns of a `signals` row in table order. */
export const SIGNAL_COLUMNS = ["run_id", "message_id", "name", "payload", "received_at", "consumed_by"] as const;

/** The values of {@link SIGNAL_COLUMNS} for a signal. */
export function signalValues(signal: SignalRecord): unknown[] {
  return [
    signal.runId,
    signal.messageId,
    signal.name,
    JSON.stringify(signal.payload),
    signal.receivedAt,
    signal.consumedBy,
  ];
}

/** The record of a `signals` row. */
export function rowToSignal(row: SignalRow): SignalRecord {
  return {
    runId: row.run_id,
    messageId: row.message_id,
    name: row.name,
    payload: JSON.parse(row.payload) as Json,
    receivedAt: row.received_at,
    consumedBy: row.consumed_by,
  };
}
