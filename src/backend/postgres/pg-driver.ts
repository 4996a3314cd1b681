import { createRequire } from "node:module";
import type Pg from "pg";
import { requirePeer } from "../../core/peer-dependency.ts";

/** The `pg` module's shape (`import pg from "pg"`). */
export type PgModule = typeof Pg;

let loaded: PgModule | undefined;

/**
 * The `pg` driver, loaded at first use: it is an optional peer dependency of cairn, so the CLI
 * and the root entry load without it, and `cairn/postgres` (which calls this when imported) or a
 * PostgreSQL URL given to the CLI fails with a MissingPeerDependencyError that says
 * `npm install pg`.
 */
export function pgDriver(): PgModule {
  loaded ??= requirePeer<PgModule>(createRequire(import.meta.url), "pg", "cairn/postgres");
  return loaded;
}
