import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { canTransition } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { expected, prng } from "./chaos/chaos-agent.ts";

/**
 * Randomised crashes: a run of parallel tools is SIGKILLed at random moments (not only at step
 * boundaries), restarted, and killed again, until a process lets it finish. The seed is printed;
 * `CAIRN_CHAOS_SEED=<n>` replays one. After every kill the test reads which steps the database
 * holds as completed; such a step must never run again.
 */

const CHILD = join(import.meta.dirname, "chaos", "chaos-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-chaos-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const base = Number(process.env.CAIRN_CHAOS_SEED ?? Date.now() % 1_000_000);
const seeds = process.env.CAIRN_CHAOS_SEED ? [base] : [base, base + 1, base + 2, base + 3];

function start(args: string[]) {
  const proc: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", CHILD, ...args]);
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { proc, out: () => out, err: () => err, exited };
}

function executions(dir: string): Map<number, number> {
  const file = join(dir, "executions");
  const counts = new Map<number, number>();
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    counts.set(Number(line), (counts.get(Number(line)) ?? 0) + 1);
  }
  return counts;
}

async function completedSteps(db: string): Promise<number[]> {
  if (!existsSync(db)) return [];
  const backend = new SqliteBackend({ path: db });
  await backend.init();
  try {
    const [run] = await backend.listRuns({ agent: "chaos" });
    if (!run) return [];
    const steps = await backend.loadSteps(run.id);
    return steps.filter((s) => s.kind === "tool" && s.status === "completed").map((s) => s.seq);
  } finally {
    await backend.close();
  }
}

describe("random SIGKILLs during parallel steps", () => {
  it.each(seeds)("seed %i", async (seed) => {
    console.log(`chaos seed ${seed} (replay with CAIRN_CHAOS_SEED=${seed})`);
    const random = prng(seed * 7919);
    const dir = mkdtempSync(join(root, `seed-${seed}-`));
    const db = join(dir, "cairn.db");
    const committedAt = new Map<number, number>();
    let kills = 0;
    let final: { state: string; output: unknown; id: string } | undefined;
    for (let attempt = 0; attempt < 12 && !final; attempt++) {
      const child = start([db, dir, String(seed)]);
      // The first kill lands early in the run; later ones anywhere; after four, the run may finish.
      const killAfter =
        kills === 0 ? 5 + Math.floor(random() * 50) : kills < 4 ? 5 + Math.floor(random() * 250) : undefined;
      const ready = new Promise<void>((resolve) => {
        const check = () => (child.out().includes("ready") ? resolve() : setTimeout(check, 5));
        check();
      });
      const outcome = await Promise.race([child.exited, ready.then(() => "ready" as const)]);
      if (outcome === "ready" && killAfter !== undefined) {
        await Promise.race([child.exited, new Promise((r) => setTimeout(r, killAfter))]);
        child.proc.kill("SIGKILL");
      }
      const { code, signal } = await child.exited;
      if (signal === "SIGKILL") {
        kills++;
        // What the database holds as completed now must never run again.
        const counts = executions(dir);
        for (const seq of await completedSteps(db)) {
          if (!committedAt.has(seq)) committedAt.set(seq, counts.get(seq) ?? 0);
        }
        continue;
      }
      expect(code, child.err()).toBe(0);
      final = JSON.parse(child.out().trim().split("\n").at(-1) ?? "{}");
    }
    const rerun = [...executions(dir).values()].filter((n) => n > 1).length;
    console.log(
      `chaos seed ${seed}: ${kills} kills, ${committedAt.size} steps seen committed, ${rerun} steps ran twice`,
    );
    expect(kills).toBeGreaterThanOrEqual(1);
    expect(final?.state).toBe("COMPLETED");
    const want = expected(seed);
    const output = final?.output as { total: number; rounds: number; draws: number[] };
    expect({ total: output.total, rounds: output.rounds }).toEqual(want);
    expect(output.draws).toHaveLength(want.rounds);

    const counts = executions(dir);
    for (const [seq, atCommit] of committedAt) {
      expect(counts.get(seq), `step ${seq} ran again after its result was committed`).toBe(atCommit);
    }
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      const transitions = await backend.listTransitions(final?.id as string);
      expect(transitions.map((t) => t.id)).toEqual(transitions.map((_, i) => i + 1));
      for (const t of transitions.slice(1)) {
        expect(canTransition(t.from as never, t.to), `${t.from} -> ${t.to}`).toBe(true);
      }
      const steps = await backend.loadSteps(final?.id as string);
      // Every step ran at least once and at most once per crash more.
      for (const step of steps.filter((s) => s.kind === "tool")) {
        const n = counts.get(step.seq) ?? 0;
        expect(n).toBeGreaterThanOrEqual(1);
        expect(n).toBeLessThanOrEqual(1 + kills);
      }
      // The recorded draws are what the output reports, whatever process drew them.
      expect(steps.filter((s) => s.kind === "value").map((s) => s.result)).toEqual(output.draws);
    } finally {
      await backend.close();
    }
  });
});
