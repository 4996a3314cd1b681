/**
 * A small bank for the money-transfer example: accounts in a SQLite file of its own, served over
 * HTTP on loopback. It is the "outside world" whose changes Cairn's effect tools must neither
 * lose nor repeat: Cairn's journal and the bank's ledger are two databases with no transaction in
 * common (DESIGN §5, the double-durability seam).
 *
 *   node --import tsx examples/money-transfer/bank.ts --db .cairn/bank.db [--port 4100] [--naive] [--seed]
 *   node --import tsx examples/money-transfer/bank.ts --db .cairn/bank.db --show
 *
 * Endpoints (JSON in and out; amounts are integers, in cents):
 *
 *   POST /accounts {id, balance, closed?}   create or reset an account
 *   POST /accounts/<id>/close               close it: withdrawals and deposits are refused
 *   GET  /accounts/<id>                     {id, balance, closed}
 *   GET  /accounts                          every account
 *   POST /withdraw {account, amount, key}   \
 *   POST /deposit  {account, amount, key}    } 200 {id, kind, account, amount, balance, key}, or 409 {error, message}
 *   POST /refund   {account, amount, key}   /  (refusals: insufficient_funds, account_closed, unknown_account)
 *   GET  /status?key=<key>                  {applied: true, result} | {applied: false, refused?}
 *   GET  /ledger[?key=<key>]                every application, oldest first
 *   POST /faults {failAfterApply?, failBeforeApply?, op?}   the next N matching operations fail (below)
 *
 * Each operation is applied at most once per idempotency key: a repeat returns the first answer
 * (a refusal too) without applying anything; the same key with another operation, account or
 * amount is refused with 422. The naive bank (`--naive`, `{ naive: true }`) has neither: no
 * `/status` (404) and every request applies again, so a caller that retries after a lost answer
 * moves the money twice. That is the bank the reconciliation demo runs against.
 *
 * Faults, for tests and demos: `failAfterApply: N` applies the next N operations (of `op`, or any)
 * and then drops the connection without answering, so the caller sees an error although the money
 * moved; `failBeforeApply: N` drops it without applying anything.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { type BankState, handleBankRequest } from "./bank-routes.ts";
import { type AccountSeed, BadRequest, BankStore, type Faults } from "./bank-store.ts";

export {
  type Account,
  type AccountSeed,
  type Applied,
  BankStore,
  type Faults,
  type LedgerEntry,
  OPERATIONS,
  type Operation,
  type Refusal,
} from "./bank-store.ts";

export interface BankOptions {
  /** The bank's SQLite file (created if missing). */
  db: string;
  /** @default 0 (any free port) */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
  /** No idempotency and no `/status`: a repeat applies again. @default false */
  naive?: boolean;
  /** Accounts to create when the bank has none yet (an existing file keeps its own). */
  seed?: AccountSeed;
}

/** A bank serving on loopback. */
export interface Bank {
  readonly url: string;
  readonly naive: boolean;
  readonly store: BankStore;
  readonly server: Server;
  /**
   * How many requests for an operation with this key this server received (applied, repeated,
   * refused or dropped by a fault), since it started: kept in memory, not in the file.
   */
  requests(key: string): number;
  /** Sets the faults injected into the next operations (replacing any left). */
  injectFaults(faults: Faults): void;
  /** Stops serving (open connections are cut) and closes the file. */
  close(): Promise<void>;
}

/** Starts a bank on loopback; `bank.url` is where it listens. */
export async function startBank(options: BankOptions): Promise<Bank> {
  const store = new BankStore(options.db);
  if (options.seed) store.seed(options.seed);
  const state: BankState = { store, naive: options.naive ?? false, faults: {}, requests: new Map() };
  const server = createServer((req, res) => {
    handleBankRequest(state, req, res).catch((err: unknown) => {
      const status = err instanceof BadRequest ? 400 : 500;
      if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: status === 400 ? "bad_request" : "internal", message: String(err) }));
    });
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => ok());
  });
  const address = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${address.address}:${address.port}`,
    naive: state.naive,
    store,
    server,
    requests: (key) => state.requests.get(key) ?? 0,
    injectFaults(next) {
      state.faults = { ...next };
    },
    close() {
      closed ??= new Promise<void>((ok) => {
        server.close(() => {
          store.close();
          ok();
        });
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** The accounts the demo bank starts with (cents). */
export const DEMO_ACCOUNTS = {
  alice: 100_000,
  bob: 50_000,
  carol: { balance: 20_000, closed: true },
} as const satisfies NonNullable<BankOptions["seed"]>;

/** Prints the accounts and the ledger of a bank file. */
export function showBank(db: string): string {
  const store = new BankStore(db);
  try {
    const lines = ["accounts:"];
    for (const a of store.accounts())
      lines.push(`  ${a.id.padEnd(10)} ${String(a.balance).padStart(10)}${a.closed ? "  (closed)" : ""}`);
    lines.push(`  ${"total".padEnd(10)} ${String(store.total()).padStart(10)}`, "ledger:");
    for (const e of store.ledger()) {
      lines.push(
        `  tx_${e.id}  ${e.kind.padEnd(8)} ${e.account.padEnd(8)} ${String(e.amount).padStart(8)}  key ${e.key}`,
      );
    }
    return lines.join("\n");
  } finally {
    store.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({
    options: {
      db: { type: "string", default: ".cairn/bank.db" },
      port: { type: "string", default: "0" },
      naive: { type: "boolean", default: false },
      seed: { type: "boolean", default: false },
      show: { type: "boolean", default: false },
    },
  });
  if (values.show) {
    console.log(showBank(values.db));
  } else {
    const bank = await startBank({
      db: values.db,
      port: Number(values.port),
      naive: values.naive,
      ...(values.seed ? { seed: DEMO_ACCOUNTS } : {}),
    });
    console.log(`${bank.naive ? "naive bank" : "bank"} listening on ${bank.url} (db ${values.db})`);
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => void bank.close().then(() => process.exit(0)));
    }
  }
}
