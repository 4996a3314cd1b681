import { type Sql, sql } from "./postgres-sql.ts";

/** The SQL of the forks of `PostgresBackend` (`postgres-forks.ts`). */

/** The statements of the forks role. */
export interface ForkStatements {
  /**
   * The fork's journal and the source's lineage, after the fork's row and first transition
   * (`createRun`): $1 the fork, $2 its steps as one journal entry at epoch 0 (JSON, none when
   * empty), $3–$5 the blobs they refer to, $6 the source, $7 the source's `forks` (JSON).
   */
  forkJournal: Sql;
}

/** The statements of {@link ForkStatements} for the quoted schema `s`. */
export function forkStatements(s: string): ForkStatements {
  return {
    forkJournal: sql(
      `WITH new_blobs AS (
         INSERT INTO ${s}.blobs (digest, text, bytes)
         SELECT b.digest, b.text, b.bytes
         FROM unnest($3::text[], $4::text[], $5::bigint[]) AS b (digest, text, bytes)
         ON CONFLICT (digest) DO UPDATE SET bytes = EXCLUDED.bytes
       ), new_entry AS (
         INSERT INTO ${s}.journal (run_id, epoch, steps)
         SELECT $1::text, 0, $2::json WHERE json_array_length($2::json) > 0
       )
       UPDATE ${s}.runs SET forks = $7::json WHERE id = $6::text`,
    ),
  };
}
