/**
 * The bank's store: accounts and the ledger in a SQLite file of its own (see bank.ts for the
 * bank as a whole). Every method is one transaction.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
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

/** Accounts to create by id: a balance (cents), or a balance and whether the account is closed. */
export type AccountSeed = Record<string, number | { balance: number; closed?: boolean }>;

/** What the bank answers a request: a status and a JSON body. */
export interface Answer {
  status: number;
  body: unknown;
  repeated?: boolean;
}

/** A request the bank refuses as malformed (HTTP 400). */
export class BadRequest extends Error {}

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
  seed(accounts: AccountSeed): void {
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
