import { STEP_VALUE_COLUMNS } from "../rows/step-rows.ts";
import { type Sql, sql } from "./postgres-sql.ts";

/** The SQL of the journal of `PostgresBackend` that reads it (its writes are the step batch's, in `batching/`). */

/**
 * The columns of `steps`, in table order: the run, the encoded step (`effect` last), the epoch
 * before it. Rows written before migration 5; later writes go to the journal.
 */
const STEP_COLUMN_LIST = ["run_id", ...STEP_VALUE_COLUMNS.filter((c) => c !== "effect"), "epoch", "effect"];
const STEP_COLUMNS = STEP_COLUMN_LIST.join(", ");

/** The statements of the journal role that read it. */
export interface JournalStatements {
  getEpoch: Sql;
  /** A run's step rows written before migration 5 (the journal holds every later write). */
  loadSteps: Sql;
  /** A run's journal entries in the order they were written: epoch, and the steps as JSON text. */
  loadJournal: Sql;
  /** The blobs of these digests ($1 text[]). */
  loadBlobs: Sql;
}

/** The statements of {@link JournalStatements} for the quoted schema `s`. */
export function journalStatements(s: string): JournalStatements {
  return {
    getEpoch: sql(`SELECT epoch FROM ${s}.runs WHERE id = $1`),
    loadSteps: sql(`SELECT ${STEP_COLUMNS} FROM ${s}.steps WHERE run_id = $1 ORDER BY seq`),
    loadJournal: sql(`SELECT epoch, steps FROM ${s}.journal WHERE run_id = $1 ORDER BY id`),
    loadBlobs: sql(`SELECT digest, text FROM ${s}.blobs WHERE digest = ANY ($1::text[])`),
  };
}
