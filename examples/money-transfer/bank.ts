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
import { mkdirSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";

/** The three operations that move money. */
export type Operation = "withdraw" | "deposit" | "refund";

export const OPERATIONS: readonly Operation[] = ["withdraw", "deposit", "refund"];

/** What an applied operation answers (and `/status` repeats). */
export interface Applied {
  /** `tx_<ledger id>`. */
  id: string;
  kind: Operation;
  account: string;
  amount: number;
  /** The account's balance right after the operation. */
  balance: number;
  key: string;
}

/** Why an operation was refused (HTTP 409). */
export type Refusal = "insufficient_funds" | "account_closed" | "unknown_account";

/** One application of an operation, as the ledger keeps it. */
export interface LedgerEntry {
  id: number;
  key: string;
  kind: Operation;
  account: string;
  amount: number;
  balance: number;
  at: number;
}

export interface Account {
  id: string;
  balance: number;
  closed: boolean;
}

/** Faults to inject into the next operations (see the module comment). */
export interface Faults {
  /** Apply, then drop the connection without an answer, this many times. */
  failAfterApply?: number;
  /** Drop the connection without applying anything, this many times. */
  failBeforeApply?: number;
  /** Only operations of this kind; any when omitted. */
  op?: Operation;
}

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
  seed?: Record<string, number | { balance: number; closed?: boolean }>;
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

/** The accounts and the ledger in the bank's SQLite file; every method is one transaction. */
export class BankStore {
  readonly db: Database.Database;

  constructor(path: string) {
    mkdirSync(dirname(resolve(path)), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = FULL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL, closed INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, kind TEXT NOT NULL, account TEXT NOT NULL,
        amount INTEGER NOT NULL, balance INTEGER NOT NULL, at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ledger_key ON ledger (key);
      CREATE TABLE IF NOT EXISTS operations (
        key TEXT PRIMARY KEY, kind TEXT NOT NULL, account TEXT NOT NULL, amount INTEGER NOT NULL,
        status INTEGER NOT NULL, answer TEXT NOT NULL, at INTEGER NOT NULL);
    `);
  }

  /** Creates the accounts if the bank has none yet. */
  seed(accounts: NonNullable<BankOptions["seed"]>): void {
    this.db.transaction(() => {
      const { n } = this.db.prepare("SELECT count(*) AS n FROM accounts").get() as { n: number };
      if (n > 0) return;
      for (const [id, spec] of Object.entries(accounts)) {
        const { balance, closed = false } = typeof spec === "number" ? { balance: spec } : spec;
        this.putAccount({ id, balance, closed });
      }
    })();
  }

  putAccount(account: Account): Account {
    if (!Number.isInteger(account.balance) || account.balance < 0)
      throw new BadRequest("balance must be an integer >= 0");
    this.db
      .prepare(
        "INSERT INTO accounts (id, balance, closed) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, closed = excluded.closed",
      )
      .run(account.id, account.balance, account.closed ? 1 : 0);
    return account;
  }

  closeAccount(id: string): Account | undefined {
    this.db.prepare("UPDATE accounts SET closed = 1 WHERE id = ?").run(id);
    return this.account(id);
  }

  account(id: string): Account | undefined {
    const row = this.db.prepare("SELECT id, balance, closed FROM accounts WHERE id = ?").get(id) as
      | { id: string; balance: number; closed: number }
      | undefined;
    return row && { id: row.id, balance: row.balance, closed: row.closed === 1 };
  }

  accounts(): Account[] {
    const rows = this.db.prepare("SELECT id, balance, closed FROM accounts ORDER BY id").all() as {
      id: string;
      balance: number;
      closed: number;
    }[];
    return rows.map((r) => ({ id: r.id, balance: r.balance, closed: r.closed === 1 }));
  }

  /** Balances by account. */
  balances(): Record<string, number> {
    return Object.fromEntries(this.accounts().map((a) => [a.id, a.balance]));
  }

  /** The sum of every balance. */
  total(): number {
    return this.accounts().reduce((sum, a) => sum + a.balance, 0);
  }

  ledger(key?: string): LedgerEntry[] {
    const sql = `SELECT id, key, kind, account, amount, balance, at FROM ledger ${key === undefined ? "" : "WHERE key = ?"} ORDER BY id`;
    const statement = this.db.prepare(sql);
    return (key === undefined ? statement.all() : statement.all(key)) as LedgerEntry[];
  }

  /** How many times an operation with this key was applied (more than 1 only at the naive bank). */
  applications(key: string): number {
    return this.ledger(key).length;
  }

  /**
   * Applies one operation in one transaction. Idempotent unless `naive`: the first answer for a key
   * is stored with the change and returned for every repeat.
   */
  apply(kind: Operation, request: { account: string; amount: number; key: string }, naive: boolean): Answer {
    return this.db.transaction((): Answer => {
      if (!naive) {
        const seen = this.db
          .prepare("SELECT kind, account, amount, status, answer FROM operations WHERE key = ?")
          .get(request.key) as
          | { kind: string; account: string; amount: number; status: number; answer: string }
          | undefined;
        if (seen) {
          if (seen.kind !== kind || seen.account !== request.account || seen.amount !== request.amount) {
            return {
              status: 422,
              body: {
                error: "key_reused",
                message: `idempotency key ${request.key} was used for ${seen.kind} ${seen.amount} on ${seen.account}`,
              },
            };
          }
          return { status: seen.status, body: JSON.parse(seen.answer), repeated: true };
        }
      }
      const answer = this.#change(kind, request);
      if (!naive) {
        this.db
          .prepare(
            "INSERT INTO operations (key, kind, account, amount, status, answer, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          )
          .run(
            request.key,
            kind,
            request.account,
            request.amount,
            answer.status,
            JSON.stringify(answer.body),
            Date.now(),
          );
      }
      return answer;
    })();
  }

  /** Whether the operation with this key was applied, and its answer (the idempotent bank only). */
  status(key: string): { applied: true; result: Applied } | { applied: false; refused?: Refusal } {
    const row = this.db.prepare("SELECT status, answer FROM operations WHERE key = ?").get(key) as
      | { status: number; answer: string }
      | undefined;
    if (!row) return { applied: false };
    const body = JSON.parse(row.answer);
    return row.status === 200 ? { applied: true, result: body as Applied } : { applied: false, refused: body.error };
  }

  close(): void {
    this.db.close();
  }

  #change(kind: Operation, request: { account: string; amount: number; key: string }): Answer {
    const account = this.account(request.account);
    const refuse = (error: Refusal, message: string): Answer => ({ status: 409, body: { error, message } });
    if (!account) return refuse("unknown_account", `no account ${request.account}`);
    if (account.closed) return refuse("account_closed", `account ${account.id} is closed`);
    const delta = kind === "withdraw" ? -request.amount : request.amount;
    if (account.balance + delta < 0) {
      return refuse("insufficient_funds", `account ${account.id} holds ${account.balance}, not ${request.amount}`);
    }
    const balance = account.balance + delta;
    this.db.prepare("UPDATE accounts SET balance = ? WHERE id = ?").run(balance, account.id);
    const { lastInsertRowid } = this.db
      .prepare("INSERT INTO ledger (key, kind, account, amount, balance, at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(request.key, kind, account.id, request.amount, balance, Date.now());
    const applied: Applied = {
      id: `tx_${lastInsertRowid}`,
      kind,
      account: account.id,
      amount: request.amount,
      balance,
      key: request.key,
    };
    return { status: 200, body: applied };
  }
}

interface Answer {
  status: number;
  body: unknown;
  repeated?: boolean;
}

class BadRequest extends Error {}

/** Starts a bank on loopback; `bank.url` is where it listens. */
export async function startBank(options: BankOptions): Promise<Bank> {
  const store = new BankStore(options.db);
  if (options.seed) store.seed(options.seed);
  const naive = options.naive ?? false;
  let faults: Faults = {};
  const requests = new Map<string, number>();

  /** Takes one fault for an operation of `kind`, if one is armed. */
  const takeFault = (kind: Operation): "before" | "after" | undefined => {
    if (faults.op !== undefined && faults.op !== kind) return undefined;
    if ((faults.failBeforeApply ?? 0) > 0) {
      faults.failBeforeApply = (faults.failBeforeApply ?? 0) - 1;
      return "before";
    }
    if ((faults.failAfterApply ?? 0) > 0) {
      faults.failAfterApply = (faults.failAfterApply ?? 0) - 1;
      return "after";
    }
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://bank");
    const path = url.pathname;
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const op = path.slice(1) as Operation;
    if (req.method === "POST" && OPERATIONS.includes(op)) {
      const body = await readJson(req);
      const request = { account: body.account, amount: body.amount, key: body.key };
      if (typeof request.account !== "string" || typeof request.key !== "string" || request.key === "") {
        return send(400, { error: "bad_request", message: "account and key must be strings" });
      }
      if (!Number.isInteger(request.amount) || request.amount <= 0) {
        return send(400, { error: "bad_request", message: "amount must be an integer > 0 (cents)" });
      }
      requests.set(request.key, (requests.get(request.key) ?? 0) + 1);
      const fault = takeFault(op);
      if (fault === "before") return void req.socket.destroy();
      const answer = store.apply(op, request, naive);
      if (fault === "after") return void req.socket.destroy();
      return send(answer.status, answer.body);
    }
    if (req.method === "GET" && path === "/status") {
      if (naive) return send(404, { error: "not_found", message: "this bank has no status endpoint" });
      const key = url.searchParams.get("key");
      if (!key) return send(400, { error: "bad_request", message: "GET /status?key=<idempotency key>" });
      return send(200, store.status(key));
    }
    if (req.method === "GET" && path === "/ledger") {
      return send(200, store.ledger(url.searchParams.get("key") ?? undefined));
    }
    if (req.method === "GET" && path === "/accounts") return send(200, store.accounts());
    if (req.method === "POST" && path === "/accounts") {
      const body = await readJson(req);
      if (typeof body.id !== "string") return send(400, { error: "bad_request", message: "id must be a string" });
      return send(200, store.putAccount({ id: body.id, balance: body.balance, closed: body.closed === true }));
    }
    const account = /^\/accounts\/([^/]+)(\/close)?$/.exec(path);
    if (account?.[1]) {
      const id = decodeURIComponent(account[1]);
      const found =
        req.method === "POST" && account[2] ? store.closeAccount(id) : req.method === "GET" ? store.account(id) : null;
      if (found === null) return send(405, { error: "method_not_allowed" });
      return found ? send(200, found) : send(404, { error: "unknown_account", message: `no account ${id}` });
    }
    if (req.method === "POST" && path === "/faults") {
      faults = { ...(await readJson(req)) };
      return send(200, faults);
    }
    send(404, { error: "not_found", message: `${req.method} ${path}` });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
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
    naive,
    store,
    server,
    requests: (key) => requests.get(key) ?? 0,
    injectFaults(next) {
      faults = { ...next };
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

async function readJson(req: IncomingMessage): Promise<Record<string, any>> {
  let text = "";
  for await (const chunk of req) text += chunk;
  if (text === "") return {};
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {}
  throw new BadRequest("the body must be a JSON object");
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
