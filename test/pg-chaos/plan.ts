import type { TransferInput } from "../../examples/money-transfer/transfer.ts";
import { prng } from "../chaos/chaos-agent.ts";

/**
 * What one seed of the PostgreSQL chaos test does, computed from the seed alone: the bank's
 * accounts, the transfers (a few into a closed account), when each run is started, when each
 * worker is killed and which, and when the server restarts.
 */

/** Runs (transfers) in all. */
export const RUNS = 200;
/** Of them, transfers into the closed account: the deposit is refused, the withdrawal refunded. */
export const INTO_CLOSED = 10;
/** Worker processes. */
export const WORKERS = 3;
/** SIGKILLs of worker processes. */
export const KILLS = 30;
/** A run is started every this many ms. */
export const START_EVERY_MS = 300;

/** The closed account (deposits refused with 409 account_closed). */
export const CLOSED = "closed-1";
/** The open accounts: enough in each that no withdrawal is ever refused for want of money. */
export const OPEN = ["acct-a", "acct-b", "acct-c", "acct-d", "acct-e", "acct-f"];
const OPENING_BALANCE = 2_000_000;

/** The bank's opening accounts (cents). */
export const ACCOUNTS: Record<string, number | { balance: number; closed: boolean }> = {
  ...Object.fromEntries(OPEN.map((id) => [id, OPENING_BALANCE])),
  [CLOSED]: { balance: 50_000, closed: true },
};

/** The sum of every opening balance. */
export const TOTAL = OPEN.length * OPENING_BALANCE + 50_000;

export interface Transfer extends TransferInput {
  /** Started this long after the first run. */
  startAtMs: number;
  /** Into the closed account: ends COMPENSATED. */
  compensates: boolean;
}

export interface Kill {
  /** Not before this long after the first run was started. */
  atMs: number;
  /** Which worker slot (0..WORKERS-1); never the slot killed just before. */
  slot: number;
}

export interface ChaosPlan {
  seed: number;
  transfers: Transfer[];
  kills: Kill[];
  /** The server restarts once, this long after the first run was started (between two kills). */
  restartAtMs: number;
  /** Fast shutdown, or immediate (as a crash of the server: WAL recovery on start). */
  restartMode: "fast" | "immediate";
  /** How long the server stays down. */
  outageMs: number;
}

export function chaosPlan(seed: number): ChaosPlan {
  const random = prng(seed * 2_654_435_761);
  const int = (n: number) => Math.floor(random() * n);
  // Which runs go into the closed account: INTO_CLOSED distinct indices.
  const closed = new Set<number>();
  while (closed.size < INTO_CLOSED) closed.add(int(RUNS));
  const transfers: Transfer[] = Array.from({ length: RUNS }, (_, i) => {
    const from = OPEN[int(OPEN.length)] as string;
    const others = OPEN.filter((a) => a !== from);
    const to = closed.has(i) ? CLOSED : (others[int(others.length)] as string);
    return {
      transferId: `t${seed}-${String(i).padStart(3, "0")}`,
      from,
      to,
      amount: 100 + int(4900),
      startAtMs: i * START_EVERY_MS,
      compensates: closed.has(i),
    };
  });
  // The server restart in the middle, between two kills, with room around it so that the kills
  // planned before it are done and the next one comes once the server is back.
  const outageMs = 1500 + int(1500);
  const restartMode = int(2) === 0 ? ("fast" as const) : ("immediate" as const);
  const gap = outageMs + 3000;
  // The kills spread over the time runs are being started, one every ~1.7 s on average.
  const window = RUNS * START_EVERY_MS - 2000 - gap;
  const spacing = (window - 1500) / KILLS;
  const middle = Math.floor(KILLS / 2);
  const kills: Kill[] = [];
  let slot = int(WORKERS);
  for (let k = 0; k < KILLS; k++) {
    if (k > 0) slot = (slot + 1 + int(WORKERS - 1)) % WORKERS;
    const atMs = 1500 + Math.round(k * spacing + random() * spacing * 0.8) + (k >= middle ? gap : 0);
    kills.push({ atMs, slot });
  }
  const restartAtMs = (kills[middle - 1]?.atMs ?? 0) + 1500;
  return {
    seed,
    transfers,
    kills,
    restartAtMs,
    restartMode,
    outageMs,
  };
}

/** The balances once every transfer ended as it must: moved, or (into the closed account) refunded. */
export function expectedBalances(transfers: readonly Transfer[]): Record<string, number> {
  const balances: Record<string, number> = Object.fromEntries(
    Object.entries(ACCOUNTS).map(([id, spec]) => [id, typeof spec === "number" ? spec : spec.balance]),
  );
  for (const t of transfers) {
    if (t.compensates) continue;
    balances[t.from] = (balances[t.from] ?? 0) - t.amount;
    balances[t.to] = (balances[t.to] ?? 0) + t.amount;
  }
  return balances;
}
