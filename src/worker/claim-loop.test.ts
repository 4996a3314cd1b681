import { describe, expect, it } from "vitest";
import type { ClaimRequest } from "../backend/backend.ts";
import { InMemoryBackend } from "../backend/memory/memory-backend.ts";
import { systemClock } from "../core/clock.ts";
import { silentLogger } from "../core/logger.ts";
import type { RunRecord } from "../core/records.ts";
import { ClaimLoop } from "./claim-loop.ts";
import { workerSettings } from "./worker-options.ts";

/**
 * The claim loop's coalescing (DESIGN §7, claims): a claim waits one turn of the event loop and
 * takes that turn's pokes; a poke during its queries gets one claim more; a failed claim answers
 * the pokes it took with one claim more, and only those.
 */

const versions = { workflow: "1", policy: null, runtime: "test" };

/** A store whose claims are counted, and can be held or made to fail. */
class ClaimStore extends InMemoryBackend {
  /** Claims asked, and the empty answers among them (one ends each claim). */
  asked = 0;
  empty = 0;
  fail = 0;
  hold: Promise<void> | undefined;

  override async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    this.asked++;
    if (this.hold) await this.hold;
    if (this.fail > 0) {
      this.fail--;
      throw new Error("connection terminated unexpectedly");
    }
    const run = await super.claimRun(request);
    if (!run) this.empty++;
    return run;
  }

  async add(id: string): Promise<void> {
    await this.createRun({
      id,
      agent: "a",
      workflow: "w",
      key: null,
      input: null,
      versions,
      meta: {},
      actor: { kind: "user", id: "test" },
      reason: "started",
      at: Date.now(),
    });
  }
}

function loopOn(store: ClaimStore) {
  const driven: string[] = [];
  let stopped = false;
  const loop = new ClaimLoop({
    workerId: "w1",
    deps: {
      backend: store,
      logger: silentLogger,
      agent: () => undefined,
      agentNames: ["a"],
      host: () => {
        throw new Error("not driven here");
      },
      versions: () => versions,
      onTransition: () => {},
      clock: systemClock,
      newRunId: () => "run_next",
    },
    settings: workerSettings({}, store),
    held: () => driven.length,
    stopped: () => stopped,
    drive: (run) => driven.push(run.id),
  });
  /** Waits until no claim is under way (one claim more included). */
  const settled = async () => {
    while (loop.current) await loop.current;
  };
  return { loop, driven, settled, stop: () => (stopped = true) };
}

describe("the claim loop", () => {
  it("takes the pokes of the turn it waits: one claim for runs started together", async () => {
    const store = new ClaimStore();
    const { loop, driven, settled } = loopOn(store);
    for (const id of ["r1", "r2", "r3"]) await store.add(id);
    // As three starts in one turn poke it.
    loop.poke();
    loop.poke();
    loop.poke();
    await settled();
    expect(driven.sort()).toEqual(["r1", "r2", "r3"]);
    expect([store.asked, store.empty]).toEqual([4, 1]);
  });

  it("claims once more for a poke that came during its queries, and only once", async () => {
    const store = new ClaimStore();
    const { loop, driven, settled } = loopOn(store);
    let release = () => {};
    store.hold = new Promise((resolve) => (release = resolve));
    loop.poke();
    while (store.asked === 0) await new Promise((r) => setImmediate(r));
    // The query is on its way: a run started now may be missed by it.
    await store.add("r1");
    loop.poke();
    loop.poke();
    store.hold = undefined;
    release();
    await settled();
    expect(driven).toEqual(["r1"]);
    expect(store.empty).toBe(2);
  });

  it("answers the pokes a failed claim took with one claim more", async () => {
    const store = new ClaimStore();
    const { loop, driven, settled } = loopOn(store);
    await store.add("r1");
    loop.poke();
    loop.poke(); // taken by the first poke's claim, which fails
    store.fail = 1;
    await settled();
    expect(driven).toEqual(["r1"]);
    expect(store.asked).toBe(3);
  });

  it("does not repeat a failed claim that took no pokes", async () => {
    const store = new ClaimStore();
    const { loop, driven, settled } = loopOn(store);
    await store.add("r1");
    store.fail = 1;
    loop.poke();
    await settled();
    expect(driven).toEqual([]);
    expect(store.asked).toBe(1);
  });

  it("claims nothing once stopped", async () => {
    const store = new ClaimStore();
    const { loop, settled, stop } = loopOn(store);
    await store.add("r1");
    stop();
    loop.poke();
    await settled();
    expect(loop.current).toBeUndefined();
    expect(store.asked).toBe(0);
  });
});
