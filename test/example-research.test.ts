import { describe, expect, it } from "vitest";
import { researcher, scriptedResearcher } from "../examples/research-agent/research.ts";
import { ScriptedModel } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/**
 * The research-agent example as docs/guides/models-and-agent-loop.md runs it, on its scripted model: the loop searches,
 * reads the two best notes side by side, and answers citing them, each call a step.
 */
forEachBackend(
  (under) => {
    describe("examples/research-agent", () => {
      it("answers from the notes it read, citing them, in six steps", async () => {
        const model = new ScriptedModel({ replies: [scriptedResearcher] });
        const rt = under.runtimes.make({ agents: [researcher], models: { researcher: model } });
        const handle = await rt.run(researcher, "answer", {
          question: "How does a durable runtime avoid paying twice after a crash?",
        });
        const output = await handle.result();
        expect(output.answer).toContain("[n1]");
        expect(output.answer).toContain("[n2]");
        expect(output.answer).toContain("idempotency key");
        expect(output).toMatchObject({ turns: 3, toolCalls: 3 });
        const steps = (await rt.history(handle.id)).steps;
        expect(steps.map((s) => `${s.kind}:${s.name}`)).toEqual([
          "llm:researcher",
          "tool:search_notes",
          "llm:researcher",
          "tool:read_note",
          "tool:read_note",
          "llm:researcher",
        ]);
        expect(steps.filter((s) => s.name === "read_note").map((s) => s.args)).toEqual([{ id: "n1" }, { id: "n2" }]);
      });
    });
  },
  // The example's steps are ordinary ones; the loop itself is tested on every backend.
  { only: ["sqlite"] },
);
