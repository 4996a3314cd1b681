import { describe, expect, it } from "vitest";
import { defineAgent, defineTool, Runtime, silentLogger } from "../src/index.ts";
import { createServer } from "../src/server/app.ts";
import { makeServer } from "./helpers/server-fixtures.ts";

/**
 * `GET /metrics` (DESIGN §7c) after a known set of runs: the Prometheus text format, with the
 * backend's counts (runs by state, paused by reason, backlog) and this process's counters, exact;
 * for an admin or the metrics token only.
 */

const SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (-?[0-9.e+-]+|\+Inf|-Inf|NaN)$/;

/** The samples of an exposition by `name{labels}`, checking every line's syntax and that each family is typed first. */
function parse(text: string): Map<string, number> {
  expect(text.endsWith("\n")).toBe(true);
  const typed = new Map<string, string>();
  const samples = new Map<string, number>();
  for (const line of text.trimEnd().split("\n")) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === "TYPE") typed.set(meta[2] as string, meta[3] as string);
      continue;
    }
    const sample = SAMPLE.exec(line);
    expect(sample, `not a sample line: ${line}`).not.toBeNull();
    const name = sample?.[1] as string;
    const family = typed.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
    expect(typed.has(family), `${name} has no # TYPE line before it`).toBe(true);
    samples.set(`${name}${sample?.[2] ?? ""}`, Number(sample?.[3]));
  }
  return samples;
}

describe("GET /metrics", () => {
  it("serves exact counts after three completed runs and two paused ones", async () => {
    const s = makeServer({ metricsToken: "scraper-token-0000000001" });
    for (let i = 0; i < 3; i++) {
      const run = await s.runtime.run("desk", "quick", { i });
      await run.result();
    }
    await s.start("signal", null);
    await s.start("ask", null);
    const { status, body, headers } = await s.call("GET", "/metrics", { token: "admin" });
    expect(status).toBe(200);
    expect(headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const samples = parse(body as string);
    expect(samples.get('cairn_runs{state="COMPLETED"}')).toBe(3);
    expect(samples.get('cairn_runs{state="PAUSED"}')).toBe(2);
    expect(samples.get('cairn_runs{state="FAILED"}')).toBe(0);
    expect(samples.get('cairn_runs_paused{reason="awaiting_signal"}')).toBe(1);
    expect(samples.get('cairn_runs_paused{reason="awaiting_user"}')).toBe(1);
    expect(samples.get('cairn_runs_paused{reason="awaiting_approval"}')).toBe(0);
    expect(samples.get("cairn_runs_backlog")).toBe(0);
    expect(samples.get('cairn_runs_started_total{agent="desk"}')).toBe(5);
    expect(samples.get('cairn_runs_ended_total{state="COMPLETED",agent="desk"}')).toBe(3);
    expect(samples.get('cairn_runs_paused_total{reason="awaiting_signal"}')).toBe(1);
    expect(samples.get('cairn_runs_paused_total{reason="awaiting_user"}')).toBe(1);
    // Five runs claimed and started: five claim-to-start observations.
    expect(samples.get("cairn_claim_to_start_seconds_count")).toBe(5);
    expect(samples.get('cairn_claim_to_start_seconds_bucket{le="+Inf"}')).toBe(5);
  });

  it("counts the backlog: runnable runs that no worker holds", async () => {
    const s = makeServer({}, { worker: false });
    await s.runtime.run("desk", "quick", {});
    await s.runtime.run("desk", "quick", {});
    const samples = parse((await s.call("GET", "/metrics", { token: "admin" })).body as string);
    expect(samples.get("cairn_runs_backlog")).toBe(2);
    expect(samples.get('cairn_runs{state="PENDING"}')).toBe(2);
  });

  it("is for an admin or the metrics token: 401 without a token, 403 for a viewer", async () => {
    const s = makeServer({ metricsToken: "scraper-token-0000000001" });
    expect((await s.call("GET", "/metrics")).status).toBe(401);
    expect((await s.call("GET", "/metrics", { token: "viewer" })).status).toBe(403);
    expect((await s.call("GET", "/metrics", { token: "operator" })).status).toBe(403);
    expect((await s.call("GET", "/metrics", { token: "scraper-token-0000000001" })).status).toBe(200);
    // The metrics token opens nothing else.
    expect((await s.call("GET", "/api/runs", { token: "scraper-token-0000000001" })).status).toBe(401);
    expect((await s.call("GET", "/metrics", { token: "admin" })).status).toBe(200);
  });

  it("counts steps by kind and status, and attempts by kind and retry, in labelled series", async () => {
    let calls = 0;
    const flaky = defineAgent({
      name: "flaky",
      tools: {
        fetch: defineTool({
          retry: { maximumAttempts: 2, initialIntervalMs: 1 },
          run: () => {
            if (calls++ === 0) throw new Error("refused");
            return calls;
          },
        }),
        echo: defineTool({ run: () => "echo" }),
      },
      workflows: {
        async go(ctx, _input: null) {
          await ctx.tool("fetch", {});
          await ctx.tool("echo", {});
          return ctx.tool("echo", {});
        },
      },
    });
    const runtime = new Runtime({ agents: [flaky], logger: silentLogger });
    try {
      await (await runtime.run(flaky, "go", null)).result();
      const response = await createServer(runtime, { logger: silentLogger }).app.request("/metrics");
      const samples = parse(await response.text());
      expect(samples.get('cairn_step_attempts_total{kind="tool",retry="false"}')).toBe(3);
      expect(samples.get('cairn_step_attempts_total{kind="tool",retry="true"}')).toBe(1);
      expect(samples.get('cairn_step_duration_seconds_count{kind="tool",status="completed"}')).toBe(3);
      expect(samples.get('cairn_step_duration_seconds_bucket{kind="tool",status="completed",le="+Inf"}')).toBe(3);
    } finally {
      await runtime.shutdown();
    }
  });
});
