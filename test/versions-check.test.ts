import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "../src/agent/define.ts";
import { InMemoryBackend, Runtimes, untilState } from "./helpers/runtime-helpers.ts";

/**
 * The contract's invariant 4: every run and transition records the workflow, policy, authority,
 * sandbox and context versions in force, and a resume checks them. Another authority fails the run
 * VERSION_MISMATCH (resumable once the right one is deployed); another sandbox or context is said
 * on the RUNNING transition, as other policies are.
 */
const runtimes = new Runtimes();
afterEach(() => runtimes.closeAll());

const waiter = defineAgent({
  name: "waiter",
  tools: {},
  workflows: {
    async wait(ctx, _input: null) {
      const signal = await ctx.waitForSignal<{ go: boolean }>("go");
      return { went: signal.go };
    },
  },
});

function on(backend: InMemoryBackend, versions: { authority?: string; sandbox?: string; context?: string }) {
  return runtimes.make({ agents: [waiter], backend, versions });
}

describe("versions of invariant 4", () => {
  it("records them on the run and each transition; another authority fails the resume until it is back", async () => {
    const backend = new InMemoryBackend();
    const first = on(backend, { authority: "mandate-1", sandbox: "none", context: "prompts-v1" });
    const handle = await first.run("waiter", "wait", null);
    const paused = await untilState(backend, handle.id, "PAUSED");
    expect(paused.versions).toMatchObject({ authority: "mandate-1", sandbox: "none", context: "prompts-v1" });
    for (const t of await backend.listTransitions(handle.id)) expect(t.versions.authority).toBe("mandate-1");
    await first.shutdown();

    const other = on(backend, { authority: "mandate-2", sandbox: "none", context: "prompts-v1" });
    await other.signal(handle.id, "go", { go: true });
    const failed = await untilState(backend, handle.id, "FAILED");
    expect(failed.error).toMatchObject({ code: "VERSION_MISMATCH" });
    expect(failed.error?.message).toContain("authority mandate-1");
    await other.shutdown();

    const right = on(backend, { authority: "mandate-1", sandbox: "none", context: "prompts-v2" });
    await right.resume(handle.id);
    const done = await right.waitFor(handle.id);
    expect(done).toMatchObject({ state: "COMPLETED", output: { went: true } });
    const running = (await backend.listTransitions(handle.id)).filter((t) => t.to === "RUNNING").at(-1);
    expect(running?.reason).toContain("context changed since the run started (prompts-v1 -> prompts-v2)");
  });
});
