import { describe, expect, it } from "vitest";
import { PRIORITY_AGING_MS } from "../../core/flow-control.ts";
import type { RunRecord } from "../../core/records.ts";
import type { CreateRunInput } from "../contract/run-store.ts";
import { endRun, LEASE_MS, move, newRun, T0, type UseBackend } from "./conformance-fixtures.ts";

/** A keyed run created at `at`. */
function keyed(key: string, limit: number, at: number, extra: Partial<CreateRunInput> = {}): Partial<CreateRunInput> {
  return { at, flow: { concurrencyKey: key, concurrencyLimit: limit }, ...extra };
}

/** Claims until nothing is claimable (at most `max` times); the ids claimed, in order. */
async function claimAll(use: UseBackend, now = T0 + 10, max = 20): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < max; i++) {
    const run = await use().claimRun({ workerId: `w${i}`, now, leaseMs: LEASE_MS });
    if (!run) break;
    ids.push(run.id);
  }
  return ids;
}

/** Flow control in the claim: concurrency keys and priorities (`core/flow-control.ts`). */
export function describeFlowControl(use: UseBackend): void {
  describe("flow control", () => {
    concurrencyKeys(use);
    concurrencyRaces(use);
    priorities(use);
  });
}

function concurrencyKeys(use: UseBackend): void {
  it("stores a run's concurrency key, limit and priority; a run without has none", async () => {
    const run = await newRun(use(), { flow: { concurrencyKey: "customer-1", concurrencyLimit: 2, priority: 5 } });
    expect(run).toMatchObject({ concurrencyKey: "customer-1", concurrencyLimit: 2, priority: 5 });
    expect(await use().getRun(run.id)).toStrictEqual(run);
    const plain = await newRun(use(), { flow: { priority: 0 } });
    expect(await use().getRun(plain.id)).not.toHaveProperty("concurrencyKey");
    expect(await use().getRun(plain.id)).not.toHaveProperty("priority");
  });

  it("claims at most `limit` runs of one key; the others wait, and are claimed when a slot frees", async () => {
    const k1 = await newRun(use(), keyed("k", 2, T0));
    const k2 = await newRun(use(), keyed("k", 2, T0 + 1));
    const k3 = await newRun(use(), keyed("k", 2, T0 + 2));
    const other = await newRun(use(), keyed("other", 1, T0 + 3));
    const plain = await newRun(use(), { at: T0 + 4 });
    expect(await claimAll(use)).toEqual([k1.id, k2.id, other.id, plain.id]);
    expect((await use().getRun(k3.id))?.leaseOwner).toBeNull();
    expect(await use().claimRun({ workerId: "w9", now: T0 + 10, leaseMs: LEASE_MS, runId: k3.id })).toBeUndefined();
    // k1 runs and ends: its slot is free, and k3 is claimed.
    const claimedK1 = (await use().getRun(k1.id)) as RunRecord;
    const { run: running } = await use().transition(move(claimedK1, "PENDING", "RUNNING", { at: T0 + 20 }));
    expect(await claimAll(use, T0 + 21)).toEqual([]);
    await endRun(use(), running, "COMPLETED");
    expect(await claimAll(use, T0 + 22)).toEqual([k3.id]);
  });

  it("a lapsed lease of a claimed run frees its slot; a RUNNING run holds it until it leaves RUNNING", async () => {
    const a = await newRun(use(), keyed("k", 1, T0));
    const b = await newRun(use(), keyed("k", 1, T0 + 1));
    expect(await claimAll(use)).toEqual([a.id]);
    const lapsed = T0 + 10 + LEASE_MS;
    // a's lease lapsed while PENDING: a is first in order and claimable again, b still waits.
    expect(await claimAll(use, lapsed)).toEqual([a.id]);
    const claimedA = (await use().getRun(a.id)) as RunRecord;
    await use().transition(move(claimedA, "PENDING", "RUNNING", { at: lapsed }));
    expect(await claimAll(use, lapsed + 10 * LEASE_MS)).toEqual([]);
    expect((await use().getRun(b.id))?.leaseOwner).toBeNull();
  });

  it("runs with one key and different limits: each run's own limit decides its claim", async () => {
    const wide = await newRun(use(), keyed("k", 3, T0));
    const narrow = await newRun(use(), keyed("k", 1, T0 + 1));
    const wide2 = await newRun(use(), keyed("k", 3, T0 + 2));
    expect(await claimAll(use)).toEqual([wide.id, wide2.id]);
    expect((await use().getRun(narrow.id))?.leaseOwner).toBeNull();
  });
}

function concurrencyRaces(use: UseBackend): void {
  it("concurrent claims never lease more than the limit of a key", async () => {
    for (let i = 0; i < 6; i++) await newRun(use(), keyed("k", 2, T0 + i));
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => use().claimRun({ workerId: `w${i}`, now: T0 + 10, leaseMs: LEASE_MS })),
    );
    expect(results.filter((r) => r !== undefined)).toHaveLength(2);
    const runs = await use().listRuns({ state: "PENDING" });
    expect(runs.filter((r) => r.leaseOwner !== null)).toHaveLength(2);
  });

  it("claimRuns, when the backend has it, keeps to the limits and to the claim order", async () => {
    const claimRuns = use().claimRuns?.bind(use());
    if (!claimRuns) return;
    const keyedRuns: RunRecord[] = [];
    for (let i = 0; i < 5; i++) keyedRuns.push(await newRun(use(), keyed("k", 2, T0 + i)));
    const plain = await newRun(use(), { at: T0 + 5 });
    const urgent = await newRun(use(), { at: T0 + 6, flow: { priority: 1 } });
    const batches = await Promise.all(
      ["w1", "w2", "w3"].map((workerId) => claimRuns({ workerId, now: T0 + 10, leaseMs: LEASE_MS, limit: 3 })),
    );
    // Claimers at once may pass over a row another one holds locked for a moment (SKIP LOCKED): a
    // run missed in one round is claimed by the next claim. The limit holds across all of them.
    const after = await claimRuns({ workerId: "w4", now: T0 + 10, leaseMs: LEASE_MS, limit: 3 });
    const claimed = [...batches.flat(), ...after].map((c) => c.run.id);
    expect(claimed.filter((id) => keyedRuns.some((r) => r.id === id))).toHaveLength(2);
    expect(claimed).toHaveLength(4);
    expect(new Set(claimed)).toEqual(new Set([keyedRuns[0]?.id, keyedRuns[1]?.id, plain.id, urgent.id]));
    expect(await claimRuns({ workerId: "w5", now: T0 + 10, leaseMs: LEASE_MS, limit: 3 })).toEqual([]);
  });
}

function priorities(use: UseBackend): void {
  it("claims runs by priority, higher first, then oldest first", async () => {
    const low = await newRun(use(), { at: T0, flow: { priority: -1 } });
    const normal = await newRun(use(), { at: T0 + 1 });
    const high1 = await newRun(use(), { at: T0 + 2, flow: { priority: 5 } });
    const high2 = await newRun(use(), { at: T0 + 3, flow: { priority: 5 } });
    expect(await claimAll(use)).toEqual([high1.id, high2.id, normal.id, low.id]);
  });

  it("bounds starvation: a run gains one priority level per PRIORITY_AGING_MS of waiting", async () => {
    const old = await newRun(use(), { at: T0 });
    // Two levels higher but arrived two aging intervals (and 1 ms) later: the old run goes first.
    const later = await newRun(use(), { at: T0 + 2 * PRIORITY_AGING_MS + 1, flow: { priority: 2 } });
    // Two levels higher and arrived 1 ms sooner than that: it goes first.
    const sooner = await newRun(use(), { at: T0 + 2 * PRIORITY_AGING_MS - 1, flow: { priority: 2 } });
    expect(await claimAll(use, T0 + 3 * PRIORITY_AGING_MS)).toEqual([sooner.id, old.id, later.id]);
  });
}
