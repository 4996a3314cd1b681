import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { RuntimeBackend, TransitionFeedEntry } from "../backend.ts";
import {
  LEASE_MS,
  move,
  newRun,
  refusal,
  runningRun,
  signalTo,
  suspendRequest,
  T0,
  type UseBackend,
  waitRecord,
} from "./conformance-fixtures.ts";

/** The backend's feed methods, which the suite checks are there before it uses them. */
type Feed = Required<Pick<RuntimeBackend, "listTransitionsSince" | "latestTransitionCursor">>;

function feedOf(backend: RuntimeBackend): Feed {
  const { listTransitionsSince, latestTransitionCursor } = backend;
  if (!listTransitionsSince || !latestTransitionCursor) {
    throw new Error(`${backend.name}: listTransitionsSince and latestTransitionCursor are both needed`);
  }
  return {
    listTransitionsSince: listTransitionsSince.bind(backend),
    latestTransitionCursor: latestTransitionCursor.bind(backend),
  };
}

/**
 * Reads the feed from `after` in pages of `limit` until it holds `count` transitions (a backend may
 * show a transition a little after its commit: PostgreSQL waits for older transactions to end),
 * checking each page on the way; then once more, to see that nothing follows.
 */
async function readFeed(feed: Feed, after: string | null, count: number, limit = 1000): Promise<TransitionFeedEntry[]> {
  const entries: TransitionFeedEntry[] = [];
  let cursor = after;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await feed.listTransitionsSince({ after: cursor, limit });
    expect(page.transitions.length).toBeLessThanOrEqual(limit);
    if (page.transitions.length > 0) expect(page.cursor).toBe(page.transitions.at(-1)?.cursor);
    else if (cursor !== null) expect(page.cursor).toBe(cursor);
    entries.push(...page.transitions);
    cursor = page.cursor;
    if (page.transitions.length === limit) continue;
    if (entries.length >= count) break;
    if (Date.now() > deadline) throw new Error(`the feed gave ${entries.length} of ${count} transitions in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const rest = await feed.listTransitionsSince({ after: cursor, limit });
  expect(rest.transitions).toEqual([]);
  return entries;
}

const keyOf = (t: Pick<TransitionRecord, "runId" | "id">) => `${t.runId}#${t.id}`;

/** Every run's stored transitions. */
async function storedTransitions(backend: RuntimeBackend, runIds: Iterable<string>): Promise<TransitionRecord[]> {
  const all: TransitionRecord[] = [];
  for (const id of runIds) all.push(...(await backend.listTransitions(id)));
  return all;
}

/** Each run's transitions in id order without a gap (from the first of it that is there). */
function expectEachRunInOrder(entries: readonly TransitionFeedEntry[]): void {
  const last = new Map<string, number>();
  for (const { transition } of entries) {
    const before = last.get(transition.runId);
    if (before !== undefined) expect(transition.id).toBe(before + 1);
    last.set(transition.runId, transition.id);
  }
}

/** A run through claim, RUNNING, PAUSED, RESUMING, RUNNING and COMPLETED: five transitions after its first. */
async function driveRun(b: RuntimeBackend, run: RunRecord, worker: string): Promise<void> {
  const claimed = (await b.claimRun({ workerId: worker, now: T0, leaseMs: LEASE_MS, runId: run.id })) as RunRecord;
  const running = (await b.transition(move(claimed, "PENDING", "RUNNING"))).run;
  const paused = (
    await b.transition(
      move(running, "RUNNING", "PAUSED", { pausedReason: "awaiting_signal", patch: { releaseLease: true } }),
    )
  ).run;
  await b.transition(move(paused, "PAUSED", "RESUMING", { fence: { unowned: true, now: T0 + 1 } }));
  const again = (await b.claimRun({ workerId: worker, now: T0 + 2, leaseMs: LEASE_MS, runId: run.id })) as RunRecord;
  const resumed = (await b.transition(move(again, "RESUMING", "RUNNING"))).run;
  await b.transition(move(resumed, "RUNNING", "COMPLETED", { patch: { output: 1, releaseLease: true } }));
}

/** The optional global transition feed: listTransitionsSince and latestTransitionCursor. */
export function describeTransitionFeed(use: UseBackend): void {
  describeFeed(use);
}

/** `the transition feed`. */
function describeFeed(use: UseBackend): void {
  describe("the transition feed", () => {
    feedOrder(use);
    feedConcurrency(use);
  });
}

/** The feed: every transition once, in order, from any cursor. */
function feedOrder(use: UseBackend): void {
  it("lists every transition once, in commit order, with its run's agent and workflow", async () => {
    const b = use();
    const feed = feedOf(b);
    const start = await feed.latestTransitionCursor();
    const empty = await feed.listTransitionsSince({ after: null, limit: 10 });
    expect(empty).toEqual({ transitions: [], cursor: start });

    const written: TransitionRecord[] = [];
    const remember = async (list: Promise<TransitionRecord[]>) => {
      written.push(...(await list));
    };
    const a = await newRun(b);
    const other = await newRun(b, { agent: "mailer", workflow: "send" });
    await remember(b.listTransitions(a.id));
    await remember(b.listTransitions(other.id));
    const claimed = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS, runId: a.id })) as RunRecord;
    const running = await b.transition(move(claimed, "PENDING", "RUNNING"));
    written.push(running.transition);
    // A stop that cancels at once, and a pause that a signal ends: transitions of other writes.
    const stopped = await b.requestStop({
      runId: other.id,
      request: { kind: "cancel", by: { kind: "user", id: "op" }, reason: "not needed", at: T0 + 5 },
      versions: running.run.versions,
    });
    written.push(...stopped.transitions);
    const suspended = await b.suspend(suspendRequest(running.run, [waitRecord(a.id, 1)]));
    if (!suspended.paused) throw new Error("not paused");
    written.push(suspended.transition);
    const signalled = await b.deliverSignal(signalTo(a.id, "approved", "m1"));
    written.push(signalled.transition as TransitionRecord);
    expect(written.map((t) => t.to)).toEqual(["PENDING", "PENDING", "RUNNING", "CANCELLED", "PAUSED", "RESUMING"]);

    const entries = await readFeed(feed, null, written.length);
    expect(entries.map((e) => e.transition)).toStrictEqual(written);
    expectEachRunInOrder(entries);
    // Cursors go into event ids (Server-Sent Events): one line of plain characters.
    for (const cursor of [start, ...entries.map((e) => e.cursor)]) expect(cursor).toMatch(/^[\w.-]+$/);
    expect(entries.map((e) => [e.agent, e.workflow])).toEqual(
      written.map((t) => (t.runId === a.id ? [a.agent, a.workflow] : ["mailer", "send"])),
    );
    expect(await storedTransitions(b, [a.id, other.id])).toEqual(
      expect.arrayContaining(entries.map((e) => e.transition)),
    );
    // From the start cursor: the same.
    expect((await readFeed(feed, start, written.length)).map((e) => e.cursor)).toEqual(entries.map((e) => e.cursor));
    expect(await feed.latestTransitionCursor()).toBe(entries.at(-1)?.cursor);
  });

  it("resumes from any cursor, in pages of at most `limit`; the latest cursor gives only what comes later", async () => {
    const b = use();
    const feed = feedOf(b);
    const runs: RunRecord[] = [];
    for (let i = 0; i < 4; i += 1) runs.push(await runningRun(b));
    const all = await readFeed(feed, null, 8);
    expect(all).toHaveLength(8);
    // Pages of 3 add up to the whole.
    const paged = await readFeed(feed, null, 8, 3);
    expect(paged).toStrictEqual(all);
    // From the middle: exactly what follows.
    expect(await readFeed(feed, all[4]?.cursor ?? null, 3)).toStrictEqual(all.slice(5));
    const one = await feed.listTransitionsSince({ after: all[1]?.cursor ?? null, limit: 1 });
    expect(one).toStrictEqual({ transitions: [all[2]], cursor: all[2]?.cursor });

    const latest = await feed.latestTransitionCursor();
    expect(latest).toBe(all.at(-1)?.cursor);
    const ended = await Promise.all(
      runs
        .slice(0, 2)
        .map((run) =>
          b.transition(move(run, "RUNNING", "COMPLETED", { patch: { output: run.id, releaseLease: true } })),
        ),
    );
    const later = await readFeed(feed, latest, 2);
    expect(later.map((e) => keyOf(e.transition)).sort()).toEqual(ended.map((e) => keyOf(e.transition)).sort());
    expect(later.map((e) => e.transition)).toEqual(expect.arrayContaining(ended.map((e) => e.transition)));
  });
}

/** The feed: concurrent writers, and cursors it did not give out. */
function feedConcurrency(use: UseBackend): void {
  it("gives each transition of concurrent writers once, each run's in id order, to a reader that reads meanwhile", async () => {
    const b = use();
    const feed = feedOf(b);
    const runs: RunRecord[] = [];
    for (let i = 0; i < 6; i += 1) runs.push(await newRun(b));
    // Start after the six creations. Not at latestTransitionCursor(): a feed may hold committed
    // transitions back for a while (PostgreSQL, while an older transaction anywhere on the server
    // is open), and those would then come after it.
    let cursor: string | null = null;
    const uncreated = new Set(runs.map((run) => run.id));
    while (uncreated.size > 0) {
      const page = await feed.listTransitionsSince({ after: cursor, limit: 100 });
      for (const entry of page.transitions) if (entry.transition.id === 1) uncreated.delete(entry.transition.runId);
      cursor = page.cursor;
      if (page.transitions.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const seen: TransitionFeedEntry[] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const page = await feed.listTransitionsSince({ after: cursor, limit: 4 });
        seen.push(...page.transitions);
        cursor = page.cursor;
        if (page.transitions.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    try {
      await Promise.all(runs.map((run, i) => driveRun(b, run, `w${i}`)));
    } finally {
      writing = false;
      await reader;
    }
    seen.push(...(await readFeed(feed, cursor, 6 * 5 - seen.length, 4)));
    const stored = await storedTransitions(
      b,
      runs.map((r) => r.id),
    );
    const fresh = stored.filter((t) => t.id > 1);
    expect(seen).toHaveLength(fresh.length);
    expect(seen.map((e) => keyOf(e.transition)).sort()).toEqual(fresh.map(keyOf).sort());
    expect(seen.map((e) => e.transition)).toEqual(expect.arrayContaining(fresh));
    expectEachRunInOrder(seen);
  });

  it("refuses a cursor it did not give out", async () => {
    const feed = feedOf(use());
    expect(await refusal(feed.listTransitionsSince({ after: "not a cursor", limit: 1 }))).toBeInstanceOf(
      InvalidInputError,
    );
  });
}
