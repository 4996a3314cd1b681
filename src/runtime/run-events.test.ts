import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/events.ts";
import type { TransitionRecord } from "../core/records.ts";
import type { RunState } from "../core/run-state.ts";
import { RunEventHub } from "./run-events.ts";

function move(runId: string, from: RunState | null, to: RunState): TransitionRecord {
  return {
    runId,
    id: 1,
    at: 0,
    actor: { kind: "worker", id: "w" },
    from,
    to,
    pausedReason: to === "PAUSED" ? "awaiting_signal" : null,
    reason: "",
    versions: { workflow: "1", policy: null, runtime: "0" },
  };
}

async function collect(iterator: AsyncGenerator<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const event of iterator) out.push(event);
  return out;
}

const never = async () => false;

describe("RunEventHub", () => {
  it("keeps a run's stream while this process executes it, and drops it when the run pauses", () => {
    const hub = new RunEventHub(() => 0);
    hub.transition(move("r1", null, "PENDING"));
    expect(hub.size).toBe(0);
    hub.transition(move("r1", "PENDING", "RUNNING"));
    hub.emit("r1", { type: "model.text", seq: 1, attempt: 1, text: "hi" } as never);
    expect(hub.size).toBe(1);
    hub.transition(move("r1", "RUNNING", "PAUSED"));
    expect(hub.size).toBe(0);
    // Nobody executes or follows it: its events cost nothing.
    hub.emit("r1", { type: "model.text", seq: 1, attempt: 1, text: "lost" } as never);
    expect(hub.size).toBe(0);
  });

  it("keeps a followed run's stream, paused or not, until its reader leaves", async () => {
    const hub = new RunEventHub(() => 0);
    const controller = new AbortController();
    const reading = collect(hub.read("r1", { checkMs: 1000, signal: controller.signal }, never));
    hub.transition(move("r1", "PENDING", "RUNNING"));
    hub.transition(move("r1", "RUNNING", "PAUSED"));
    expect(hub.size).toBe(1);
    controller.abort();
    const events = await reading;
    expect(events.map((e) => (e.type === "transition" ? e.to : e.type))).toEqual(["RUNNING", "PAUSED"]);
    expect(events.map((e) => e.offset)).toEqual([0, 1]);
    expect(hub.size).toBe(0);
  });

  it("keeps the streams of the last 1,000 settled runs for late readers, and no more", async () => {
    const hub = new RunEventHub(() => 0);
    for (let i = 0; i < 1_200; i++) {
      hub.transition(move(`r${i}`, "PENDING", "RUNNING"));
      hub.transition(move(`r${i}`, "RUNNING", "COMPLETED"));
    }
    expect(hub.size).toBe(1_000);
    const late = await collect(hub.read("r1199", { checkMs: 1000 }, never));
    expect(late.map((e) => (e.type === "transition" ? e.to : e.type))).toEqual(["RUNNING", "COMPLETED"]);
    // A run dropped from the cache gives a late reader nothing: it ends once told the run settled.
    const gone = await collect(hub.read("r0", { checkMs: 5 }, async () => true));
    expect(gone).toEqual([]);
    expect(hub.size).toBe(1_000);
  });

  it("gives a reader the events that arrive, with the run's end, while it holds the ones before", async () => {
    const hub = new RunEventHub(() => 0);
    hub.transition(move("r1", "PENDING", "RUNNING"));
    hub.emit("r1", { type: "model.start", seq: 1, attempt: 1 } as never);
    const seen: string[] = [];
    for await (const event of hub.read("r1", { checkMs: 1000 }, never)) {
      seen.push(event.type === "transition" ? event.to : event.type);
      // While the reader holds the first event, the run finishes.
      if (seen.length === 1) {
        hub.emit("r1", { type: "model.end", seq: 1, attempt: 1 } as never);
        hub.transition(move("r1", "RUNNING", "COMPLETED"));
      }
    }
    expect(seen).toEqual(["RUNNING", "model.start", "model.end", "COMPLETED"]);
  });
});
