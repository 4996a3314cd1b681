import { createHash } from "node:crypto";
import type pg from "pg";
import type { Wake } from "../contract/wake-ups.ts";
import { pgDriver } from "./pg-driver.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/**
 * The NOTIFY channel of a schema. Channel names are identifiers (63 bytes at most), so a long
 * schema name is replaced by a digest of it.
 */
export function wakeChannel(schema: string): string {
  const name = `cairn_wake_${schema}`;
  return Buffer.byteLength(name) <= 63
    ? name
    : `cairn_wake_${createHash("sha256").update(schema).digest("hex").slice(0, 32)}`;
}

const PAYLOAD_PREFIX = { runnable: "r", ended: "e", stop: "s" } as const;

/** The payload of a wake-up: `r:<runId>` (runnable), `e:<runId>` (ended) or `s:<runId>` (stop). */
export function wakePayload(wake: Exclude<Wake, { kind: "reconnected" }>): string {
  return `${PAYLOAD_PREFIX[wake.kind]}:${wake.runId}`;
}

/** The wake-up of a payload; undefined for one this version does not know (a newer sender's). */
export function parsePayload(payload: string | undefined): Wake | undefined {
  if (payload?.[1] !== ":") return undefined;
  const runId = payload.slice(2);
  switch (payload[0]) {
    case "r":
      return { kind: "runnable", runId };
    case "e":
      return { kind: "ended", runId };
    case "s":
      return { kind: "stop", runId };
    default:
      return undefined;
  }
}

/**
 * One LISTEN connection, kept open: when it drops (a server restart, a network cut, an idle
 * timeout) it is opened again with backoff (100 ms doubling to 5 s) and the channel listened to
 * again, then the listener hears `reconnected`, since wake-ups sent meanwhile are lost and the
 * caller must look for work itself (a catch-up).
 */
export class WakeListener {
  readonly #connect: () => pg.Client;
  readonly #channel: string;
  readonly #onWake: (wake: Wake) => void;
  #client: pg.Client | undefined;
  #stopped = false;
  #reconnecting: Promise<void> | undefined;

  constructor(options: { connect: () => pg.Client; channel: string; onWake: (wake: Wake) => void }) {
    this.#connect = options.connect;
    this.#channel = options.channel;
    this.#onWake = options.onWake;
  }

  /** Connects and listens; rejects when the first connection fails. */
  async start(): Promise<void> {
    await this.#listen();
  }

  /** Stops listening and closes the connection. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #listen(): Promise<void> {
    const client = this.#connect();
    client.on("notification", (message) => {
      if (message.channel !== this.#channel) return;
      const wake = parsePayload(message.payload);
      if (wake) this.#onWake(wake);
    });
    let dropped = false;
    const lost = () => {
      dropped = true;
      if (this.#client !== client) return;
      this.#client = undefined;
      client.end().catch(() => undefined);
      this.#reconnect();
    };
    client.on("error", lost);
    client.on("end", lost);
    await client.connect();
    await client.query(`LISTEN ${pgDriver().escapeIdentifier(this.#channel)}`);
    if (this.#stopped || dropped) {
      await client.end().catch(() => undefined);
      // A server going down can send its "terminating connection" right behind the LISTEN's reply,
      // heard before this line runs, when `lost` could not know the connection yet: keeping it
      // would leave the listener deaf with nothing to reconnect it. Failing makes the caller try
      // again (the reconnect loop) or report it (start()).
      if (dropped && !this.#stopped) throw new Error("the LISTEN connection was closed as it was opened");
      return;
    }
    this.#client = client;
  }

  #reconnect(): void {
    if (this.#stopped || this.#reconnecting) return;
    this.#reconnecting = (async () => {
      for (let delay = 100; !this.#stopped; delay = Math.min(delay * 2, 5000)) {
        await new Promise((resolve) => setTimeout(resolve, delay).unref?.());
        if (this.#stopped) return;
        try {
          await this.#listen();
          if (!this.#stopped) this.#onWake({ kind: "reconnected" });
          return;
        } catch {
          // The server is not back yet: try again after the next delay.
        }
      }
    })().finally(() => {
      this.#reconnecting = undefined;
    });
  }
}

/**
 * `subscribe`: wake-ups over LISTEN/NOTIFY on one dedicated connection (outside the pool, with the
 * pool's options), re-established with backoff when it drops, after which the listener hears
 * `reconnected`. Returns the unsubscribe function.
 */
export async function listenForWakeUps(
  db: PostgresConnection,
  channel: string,
  listener: (wake: Wake) => void,
): Promise<() => Promise<void>> {
  const pool = db.ready();
  const wakeListener = new WakeListener({
    channel,
    onWake: listener,
    connect: () => {
      const client = new (pgDriver().Client)({ ...pool.options, application_name: "cairn-listener" });
      client.on("error", () => {});
      return client;
    },
  });
  await db.call("subscribe", () => wakeListener.start());
  return () => wakeListener.stop();
}
