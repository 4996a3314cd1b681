import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { type RawSseEvent, readSse } from "../src/api/sse-reader.ts";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { desk, makeServer, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * The live event streams (Server-Sent Events), read from `app.request`'s body: ids, resuming with
 * Last-Event-ID, runs executed by another runtime on the same store, and the all-runs stream.
 */

type Server = ReturnType<typeof makeServer>;
type Event = RawSseEvent & { json: any };

/** Opens `path` as an event stream (as the viewer). */
async function open(s: Server, path: string, lastEventId?: string): Promise<Response> {
  const response = await s.server.app.request(path, {
    headers: {
      Authorization: `Bearer ${TOKENS.viewer}`,
      Accept: "text/event-stream",
      ...(lastEventId !== undefined && { "Last-Event-ID": lastEventId }),
    },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return response;
}

/**
 * Reads events until `done` says so (or the stream ends), then closes the stream. `during` runs
 * once the reading has begun.
 */
async function read(
  response: Response,
  done: (events: Event[]) => boolean,
  during?: () => Promise<unknown>,
): Promise<Event[]> {
  const events: Event[] = [];
  const reading = (async () => {
    for await (const raw of readSse(response.body!)) {
      events.push({ ...raw, json: JSON.parse(raw.data) });
      if (done(events)) break;
    }
  })();
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`timed out; got ${events.map((e) => e.event).join(", ")}`)), 8000).unref(),
  );
  if (during) await during();
  await Promise.race([reading, timeout]);
  return events;
}

/** A fresh SQLite file's path (its directory is removed by the test). */
function sqlitePath(): string {
  return join(tmpdir(), "cairn-server-events-tests", randomUUID(), "cairn.db");
}

const transitions = (events: Event[]) => events.filter((e) => e.event === "transition").map((e) => e.json.to);

/**
 * What the all-runs stream of `s` gives while `worker` (another runtime on the same storage, of
 * which the server's runtime hears nothing) starts one `desk` run and drives it to COMPLETED; the
 * worker is shut down after.
 */
async function eventsOfARunElsewhere(s: Server, worker: Runtime): Promise<{ events: Event[]; id: string }> {
  try {
    await worker.start();
    const stream = await open(s, "/api/events");
    let id = "";
    const events = await read(
      stream,
      (e) => e.some((x) => x.event === "transition" && x.json.runId === id && x.json.to === "COMPLETED"),
      async () => {
        id = (await worker.run("desk", "quick", 5)).id;
      },
    );
    return { events, id };
  } finally {
    await worker.shutdown({ graceMs: 0 });
  }
}

describe("a run's event stream", () => {
  it("sends transitions and steps with ids, then end; Last-Event-ID resumes after the given event", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const stream = await open(s, `/api/runs/${run.id}/events`);
    const events = await read(
      stream,
      (e) => e.some((x) => x.event === "end"),
      async () => {
        await new Promise((r) => setTimeout(r, 50));
        await s.call("POST", `/api/runs/${run.id}/waits/w1/answer`, { token: "operator", body: { value: { n: 2 } } });
      },
    );
    expect(transitions(events)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING", "RUNNING", "COMPLETED"]);
    const first = events.find((e) => e.event === "transition");
    expect(first?.json).toMatchObject({
      runId: run.id,
      id: 1,
      to: "PENDING",
      state: "PENDING",
      agent: "desk",
      workflow: "ask",
    });
    const steps = events.filter((e) => e.event === "step").map((e) => [e.json.seq, e.json.status]);
    expect(steps).toContainEqual([1, "started"]);
    expect(steps.at(-1)).toEqual([1, "completed"]);
    expect(events.at(-1)).toMatchObject({ event: "end", json: { runId: run.id, state: "COMPLETED" } });
    // Every event has an id; the transition part never goes back.
    const ids = events.map((e) => e.id ?? "");
    expect(ids.every((id) => /^\d+\.\d+\.\d+\.\d+\.\d+\.[0-9a-f]+$/.test(id))).toBe(true);
    const parts = ids.map((id) => Number(id.split(".")[0]));
    expect(parts).toEqual([...parts].sort((a, b) => a - b));

    // Reconnect after the PAUSED transition: only what came after it.
    const paused = events.find((e) => e.event === "transition" && e.json.to === "PAUSED");
    const again = await read(await open(s, `/api/runs/${run.id}/events`, paused?.id), (e) =>
      e.some((x) => x.event === "end"),
    );
    expect(transitions(again)).toEqual(["RESUMING", "RUNNING", "COMPLETED"]);
    // The step changed after the PAUSED event's position: its current state comes, once.
    expect(again.filter((e) => e.event === "step").map((e) => [e.json.seq, e.json.status])).toEqual([[1, "completed"]]);

    // From the last id: nothing but the end.
    const last = events.at(-1)?.id;
    const none = await read(await open(s, `/api/runs/${run.id}/events?from=${last}`), (e) =>
      e.some((x) => x.event === "end"),
    );
    expect(none.map((e) => e.event)).toEqual(["end"]);
  });

  it("streams the model's text for runs this process executes", async () => {
    const s = makeServer({}, { models: { default: new ScriptedModel({ replies: ["hello there, friend"] }) } });
    const run = await s.start("talk", null, "COMPLETED");
    const events = await read(await open(s, `/api/runs/${run.id}/events`), (e) => e.some((x) => x.event === "end"));
    const text = events
      .filter((e) => e.event === "model.text")
      .map((e) => e.json.text)
      .join("");
    expect(text).toBe("hello there, friend");
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(["model.start", "model.end", "step"]));
    // Resuming from the model.start event: the text again, not the start.
    const start = events.find((e) => e.event === "model.start");
    const again = await read(await open(s, `/api/runs/${run.id}/events`, start?.id), (e) =>
      e.some((x) => x.event === "end"),
    );
    expect(again.filter((e) => e.event === "model.start")).toHaveLength(0);
    expect(
      again
        .filter((e) => e.event === "model.text")
        .map((e) => e.json.text)
        .join(""),
    ).toBe("hello there, friend");
  });

  it("follows a run another runtime executes on the same store (polling the backend)", async () => {
    const backend = new InMemoryBackend();
    // The server's runtime executes nothing; a second runtime (a `cairn worker`) does.
    const s = makeServer({}, { backend, worker: false });
    const worker = new Runtime({ agents: [desk], backend, logger: silentLogger });
    try {
      const started = await s.call("POST", "/api/runs", {
        token: "operator",
        body: { agent: "desk", workflow: "signal", input: null },
      });
      const id = started.body.run.id as string;
      await worker.start();
      await untilState(backend, id, "PAUSED");
      const events = await read(
        await open(s, `/api/runs/${id}/events`),
        (e) => e.some((x) => x.event === "end"),
        async () => {
          await new Promise((r) => setTimeout(r, 50));
          await worker.signal(id, "go", { x: 1 });
        },
      );
      expect(transitions(events)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING", "RUNNING", "COMPLETED"]);
      expect(events.at(-1)?.json.state).toBe("COMPLETED");
    } finally {
      await worker.shutdown({ graceMs: 0 });
    }
  });

  it("keeps watching an INTERRUPTED run, which recovery or an operator takes up again", async () => {
    const s = makeServer({}, { worker: false });
    const handle = await s.runtime.run("desk", "quick", 1);
    const backend = s.runtime.backend;
    const claimed = await backend.claimRun({ workerId: "lost-worker", now: Date.now(), leaseMs: 60_000 });
    const base = {
      runId: handle.id,
      actor: { kind: "worker" as const, id: "lost-worker" },
      versions: claimed!.versions,
    };
    const fence = { epoch: claimed!.epoch };
    await backend.transition({ ...base, from: "PENDING", to: "RUNNING", reason: "claimed", at: Date.now(), fence });
    await backend.transition({
      ...base,
      from: "RUNNING",
      to: "INTERRUPTED",
      reason: "lost",
      at: Date.now(),
      fence,
      patch: { releaseLease: true },
    });
    const events = await read(
      await open(s, `/api/runs/${handle.id}/events`),
      (e) => e.some((x) => x.event === "end" || (x.event === "transition" && x.json.to === "RESUMING")),
      async () => {
        await new Promise((r) => setTimeout(r, 80));
        await s.call("POST", `/api/runs/${handle.id}/resume`, { token: "operator", body: {} });
      },
    );
    expect(transitions(events)).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING"]);
    expect(events.some((e) => e.event === "end")).toBe(false);
  });

  it("sends heartbeat comments while nothing happens", async () => {
    const s = makeServer({ heartbeatMs: 20 });
    const run = await s.start("ask", null);
    const response = await open(s, `/api/runs/${run.id}/events`);
    const reader = response.body!.getReader();
    let text = "";
    while (!text.includes(": heartbeat")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(text).toContain(": heartbeat\n\n");
    expect(text).toContain("retry: 1000");
  });
});

describe("the all-runs event stream", () => {
  it("sends every run's transitions, and Last-Event-ID gets exactly what was missed", async () => {
    const s = makeServer();
    const stream = await open(s, "/api/events");
    let firstRun = "";
    const events = await read(
      stream,
      (e) => e.some((x) => x.event === "transition" && x.json.to === "PAUSED"),
      async () => {
        firstRun = (await s.start("ask", null)).id;
      },
    );
    expect(events[0]).toMatchObject({ event: "ready", json: { resumed: false } });
    expect(transitions(events)).toEqual(["PENDING", "RUNNING", "PAUSED"]);
    expect(events.slice(1).every((e) => e.json.runId === firstRun)).toBe(true);
    const ids = events.map((e) => e.id ?? "");
    expect(ids.every((id) => /^[0-9a-f]+\.\d+$/.test(id))).toBe(true);
    const seqs = ids.map((id) => Number(id.split(".")[1]));
    expect(seqs.slice(1)).toEqual([seqs[0]! + 1, seqs[0]! + 2, seqs[0]! + 3]);

    // Disconnected: the run is answered and completes, and another run starts.
    await s.call("POST", `/api/runs/${firstRun}/waits/w1/answer`, { token: "operator", body: { value: { n: 1 } } });
    await s.runtime.waitFor(firstRun);
    const second = await s.start("quick", 1, "COMPLETED");
    const missed = await read(await open(s, "/api/events", events.at(-1)?.id), (e) =>
      e.some((x) => x.event === "transition" && x.json.runId === second.id && x.json.to === "COMPLETED"),
    );
    expect(missed[0]).toMatchObject({ event: "ready", json: { resumed: true } });
    expect(missed.slice(1).map((e) => `${e.json.runId === firstRun ? "a" : "b"}:${e.json.to}`)).toEqual([
      "a:RESUMING",
      "a:RUNNING",
      "a:COMPLETED",
      "b:PENDING",
      "b:RUNNING",
      "b:COMPLETED",
    ]);

    // An id of another server process cannot be resumed: ready says so.
    const stale = await read(await open(s, "/api/events", "deadbeef.3"), (e) => e.length >= 1);
    expect(stale[0]).toMatchObject({ event: "ready", json: { resumed: false } });
  });

  it("finds transitions other processes record, by polling, on a backend without a transition feed", async () => {
    // A custom backend without the optional feed: the server polls its runs.
    const backend = Object.assign(new InMemoryBackend(), {
      listTransitionsSince: undefined,
      latestTransitionCursor: undefined,
    });
    const s = makeServer({}, { backend, worker: false });
    const { events, id } = await eventsOfARunElsewhere(
      s,
      new Runtime({ agents: [desk], backend, logger: silentLogger }),
    );
    expect(events.filter((e) => e.event === "transition").every((e) => e.json.runId === id)).toBe(true);
    expect(transitions(events)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
  });

  it("delivers the transitions another process makes on the same SQLite file, from the backend's feed", async () => {
    const path = sqlitePath();
    const s = makeServer({}, { backend: new SqliteBackend({ path }), worker: false });
    // Another process: its own connection to the file; the server's runtime hears nothing of it.
    const worker = new Runtime({ agents: [desk], backend: new SqliteBackend({ path }), logger: silentLogger });
    try {
      const { events, id } = await eventsOfARunElsewhere(s, worker);
      expect(events[0]).toMatchObject({ event: "ready", json: { resumed: false } });
      const mine = events.filter((e) => e.event === "transition");
      expect(mine.map((e) => [e.json.runId, e.json.to])).toEqual([
        [id, "PENDING"],
        [id, "RUNNING"],
        [id, "COMPLETED"],
      ]);
      expect(mine[0]?.json).toMatchObject({ id: 1, from: null, state: "PENDING", agent: "desk", workflow: "quick" });
      // Ids are the file's feed cursors (`<feed id>.<position>`), one after the other.
      const ids = events.map((e) => Number(e.id?.split(".")[1]));
      expect(ids.slice(1)).toEqual([ids[0]! + 1, ids[0]! + 2, ids[0]! + 3]);
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  });

  it("resumes a Last-Event-ID after a server restart, with what other processes did meanwhile", async () => {
    const path = sqlitePath();
    try {
      const first = makeServer({}, { backend: new SqliteBackend({ path }) });
      let started = "";
      const before = await read(
        await open(first, "/api/events"),
        (e) => e.some((x) => x.event === "transition" && x.json.runId === started && x.json.to === "COMPLETED"),
        async () => {
          started = (await first.runtime.run("desk", "quick", 1)).id;
        },
      );
      const lastId = before.at(-1)?.id;
      first.server.close();
      await first.runtime.shutdown({ graceMs: 0 });

      // While no server runs, another process runs a run.
      const other = new Runtime({ agents: [desk], backend: new SqliteBackend({ path }), logger: silentLogger });
      let meanwhile = "";
      try {
        await other.start();
        meanwhile = (await other.run("desk", "quick", 2)).id;
        await other.waitFor(meanwhile);
      } finally {
        await other.shutdown({ graceMs: 0 });
      }

      const second = makeServer({}, { backend: new SqliteBackend({ path }) });
      let after = "";
      const resumed = await read(
        await open(second, "/api/events", lastId),
        (e) => e.some((x) => x.event === "transition" && x.json.runId === after && x.json.to === "COMPLETED"),
        async () => {
          await new Promise((r) => setTimeout(r, 50));
          after = (await second.runtime.run("desk", "quick", 3)).id;
        },
      );
      expect(resumed[0]).toMatchObject({ event: "ready", id: lastId, json: { resumed: true } });
      expect(
        resumed
          .slice(1)
          .map((e) => `${e.json.runId === meanwhile ? "b" : e.json.runId === after ? "c" : "?"}:${e.json.to}`),
      ).toEqual(["b:PENDING", "b:RUNNING", "b:COMPLETED", "c:PENDING", "c:RUNNING", "c:COMPLETED"]);
      const ids = resumed.map((e) => Number(e.id?.split(".")[1]));
      expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));

      // An id that is not one of this file's: from now.
      const stale = await read(await open(second, "/api/events", "deadbeef.3"), (e) => e.length >= 1);
      expect(stale[0]).toMatchObject({ event: "ready", json: { resumed: false } });
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  });
});
