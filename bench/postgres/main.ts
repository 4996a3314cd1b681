import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import pg from "pg";
import { childNodeArgs, children } from "./child.ts";
import { concurrentSection } from "./concurrent-section.ts";
import { SERVER_URL, values } from "./options.ts";
import { loadPeers, type PeerUrls } from "./peers.ts";
import { sequentialSection } from "./sequential-section.ts";
import { useServerAdmin } from "./server-cpu.ts";
import { settingsOf } from "./settings.ts";
import { type OpenPeers, signalSection } from "./signal-section.ts";

/** The main process: the server's settings, a database per system, the three sections, the clean-up. */
export async function main(): Promise<void> {
  const settings = settingsOf();
  const started = performance.now();
  const server = await openServer();
  printHeader(server);
  const open: OpenPeers = {};
  useServerAdmin(server.admin);
  try {
    const cairnUrl = await server.database("cairn");
    const peerUrls = await peerDatabases(server);
    await sequentialSection(settings, cairnUrl, peerUrls);
    await concurrentSection(settings, cairnUrl, peerUrls);
    await signalSection(settings, cairnUrl, peerUrls, open);
    console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await open.peers?.dbos.shutdown().catch(() => undefined);
    await server.cleanUp();
  }
}

/** The server as the bench uses it: its admin connection and settings, the databases it makes and drops. */
interface Server {
  admin: pg.Client;
  settings: Record<
    "version" | "synchronousCommit" | "fsync" | "walSyncMethod" | "commitDelay" | "maxConnections",
    string | undefined
  >;
  prefix: string;
  /** Makes the database of `system`; its URL. */
  database(system: string): Promise<string>;
  /** Kills the children left and drops the databases. */
  cleanUp(): Promise<void>;
}

async function openServer(): Promise<Server> {
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  const show = async (name: string) => (await admin.query(`SHOW ${name}`)).rows[0]?.[name] as string;
  const server = {
    version: (await show("server_version")).split(" ")[0],
    synchronousCommit: await show("synchronous_commit"),
    fsync: await show("fsync"),
    walSyncMethod: await show("wal_sync_method"),
    commitDelay: await show("commit_delay"),
    maxConnections: await show("max_connections"),
  };
  const prefix = `cairn_pgbench_${randomBytes(3).toString("hex")}`;
  const databases: string[] = [];
  const database = async (system: string) => {
    const name = `${prefix}_${system}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    databases.push(name);
    const url = new URL(SERVER_URL);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const cleanUp = async () => {
    for (const child of [...children]) child.process.kill("SIGKILL");
    for (const name of databases.splice(0)) {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    }
    await admin.end().catch(() => undefined);
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  process.once("SIGTERM", () => void cleanUp().finally(() => process.exit(143)));
  // Output piped into `head`: finish (and drop the databases) rather than die of EPIPE.
  process.stdout.on("error", () => {});
  return { admin, settings: server, prefix, database, cleanUp };
}

/** The machine, the server's settings, the child processes' flags and the databases' names. */
function printHeader({ settings: server, prefix }: Server): void {
  const cpu = cpus();
  const url = new URL(SERVER_URL);
  console.log(
    `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}; ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );
  console.log(
    `server: PostgreSQL ${server.version} at ${url.host} (TCP, same machine): synchronous_commit=${server.synchronousCommit},` +
      ` fsync=${server.fsync}, wal_sync_method=${server.walSyncMethod}, commit_delay=${server.commitDelay},` +
      ` max_connections=${server.maxConnections}`,
  );
  console.log(
    childNodeArgs().length > 0
      ? `child processes (every system's): node ${childNodeArgs().join(" ")} (CAIRN_BENCH_CHILD_NODE_ARGS)`
      : "child processes (every system's): node's defaults, no V8 flags",
  );
  console.log(`databases: ${prefix}_* (created now, dropped at the end)\n`);
}

/** The peers' databases, unless `--skip-peers` or bench/peers is not installed (said, then Cairn alone). */
async function peerDatabases(server: Server): Promise<PeerUrls | undefined> {
  let peerUrls: PeerUrls | undefined;
  if (!values["skip-peers"]) {
    try {
      const load = await loadPeers();
      peerUrls = { load, dbosUrl: await server.database("dbos"), graphUrl: await server.database("langgraph") };
    } catch (error) {
      console.log(
        `peers not measured: ${String(error).split("\n")[0]} (npm run bench:postgres installs bench/peers)\n`,
      );
    }
  }
  return peerUrls;
}
