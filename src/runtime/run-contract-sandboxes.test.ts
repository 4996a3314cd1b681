import { describe, expect, it } from "vitest";
import type { AttemptRecord, Json, StepRecord } from "../core/records.ts";
import { isolationOf } from "./run-contract-sandboxes.ts";

/** The contract's isolation section, read from a journal's sandbox steps. */

let seq = 0;
function step(name: string, result: unknown, attempts: Partial<AttemptRecord>[] = [{}], args: Json = null): StepRecord {
  seq += 1;
  return {
    runId: "r1",
    seq,
    kind: "sandbox",
    name,
    status: "completed",
    argsDigest: "",
    args,
    result: result as Json,
    error: undefined,
    attempts: attempts.map((a, i) => ({ attempt: i + 1, startedAt: seq * 1000, endedAt: seq * 1000 + 1, ...a })),
    heartbeat: undefined,
    usage: undefined,
    startedAt: seq * 1000,
    endedAt: seq * 1000 + 1,
    epoch: 1,
  };
}

const info = (id: string, isolated = true) => ({
  id,
  label: "r1/b",
  kind: isolated ? "bubblewrap" : "local",
  isolated,
  network: false,
  mounts: [],
  limits: {},
  workspace: "/workspace",
  createdAt: 1,
});

describe("isolationOf", () => {
  it("is null and empty for a run without sandboxes", () => {
    expect(isolationOf("r1", [])).toEqual({ isolated: null, sandboxes: [] });
  });

  it("tells a sandbox's snapshots, release, restore, rebuild and the workflow's own destroy", () => {
    seq = 0;
    const lost = { code: "SANDBOX_LOST", name: "SandboxLostError", message: "gone" };
    const steps = [
      step("sandbox:b", info("s1")),
      step("snapshot:b", { id: "sha256:a", bytes: 10 }),
      step("release:b", { id: "sha256:b", bytes: 20 }),
      step("exec:b", { exitCode: 0 }, [
        { error: lost },
        { restored: { name: "b", lost: null, id: "s2", snapshot: "sha256:b", at: 4000 } },
      ]),
      step("sandbox:b", info("s3")),
      step("destroy:b", { id: "s3" }),
    ];
    const { isolated, sandboxes } = isolationOf("r1", steps);
    expect(isolated).toBe(true);
    expect(sandboxes).toEqual([
      {
        name: "b",
        label: "r1/b",
        info: info("s3"),
        ids: ["s1", "s2", "s3"],
        losses: [{ seq: 4, attempt: 1, at: new Date(4001).toISOString(), message: "gone" }],
        restores: [
          { seq: 4, attempt: 2, at: new Date(4000).toISOString(), lost: null, id: "s2", snapshot: "sha256:b" },
        ],
        snapshots: [
          { seq: 2, id: "sha256:a", bytes: 10, at: new Date(2001).toISOString() },
          { seq: 3, id: "sha256:b", bytes: 20, at: new Date(3001).toISOString() },
        ],
        destroyedAt: new Date(6001).toISOString(),
        destroyedBy: "destroy",
      },
    ]);
  });

  it("says a run is not isolated when one of its sandboxes is local, and names the cleanup", () => {
    seq = 0;
    const steps = [
      step("sandbox:a", { ...info("s1"), label: "r1/a" }),
      step("sandbox:b", info("s2", false)),
      step("exec:a", { exitCode: 0 }),
      step("destroy:a", { id: "s1" }, [{}], { cleanup: true, id: "s1" }),
    ];
    const { isolated, sandboxes } = isolationOf("r1", steps);
    expect(isolated).toBe(false);
    expect(sandboxes.map((s) => [s.name, s.destroyedBy])).toEqual([
      ["a", "cleanup"],
      ["b", null],
    ]);
  });
});
