import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** examples/tracing.ts as docs/guides/observability.md runs it: the trace tree and the metrics. */
describe("examples/tracing.ts", () => {
  it("prints the research agent's trace as a tree under the caller's span, then the metrics", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", join("examples", "tracing.ts")], {
      cwd: join(import.meta.dirname, ".."),
      encoding: "utf8",
      timeout: 60_000,
    });
    const lines = out.split("\n");
    const at = (prefix: string) => lines.findIndex((line) => line.startsWith(prefix));
    expect(at("answer a question")).toBeGreaterThan(0);
    expect(at("  start researcher.answer")).toBe(at("answer a question") + 1);
    expect(at("    run researcher.answer")).toBe(at("answer a question") + 2);
    expect(lines.filter((line) => line.startsWith("      llm researcher"))).toHaveLength(3);
    expect(lines.filter((line) => line.startsWith("      tool "))).toHaveLength(3);
    expect(out).toMatch(/attempt 1 .*gen_ai\.response\.finish_reasons=\["stop"\]/);
    expect(out).toContain('cairn_runs{state="COMPLETED"} 1');
    expect(out).toContain('cairn_runs_ended_total{state="COMPLETED",agent="researcher"} 1');
  });
});
