import { describe, expect, it, vi } from "vitest";
import { CairnError, ContextOverflowError, ModelRequestError, ToolFailedError } from "./errors.ts";

describe("instanceof across copies of Cairn", () => {
  it("holds for an error made by another copy of the module, by the class's marker", async () => {
    // A second instance of the modules, as two versions of Cairn in one node_modules would load.
    vi.resetModules();
    const other = await import("./errors.ts");
    expect(other.ContextOverflowError).not.toBe(ContextOverflowError);
    const foreign = new other.ContextOverflowError("too long", { provider: "p", status: 400 });
    expect(Object.getPrototypeOf(foreign)).not.toBe(ContextOverflowError.prototype);
    expect(foreign instanceof ContextOverflowError).toBe(true);
    expect(foreign instanceof ModelRequestError).toBe(true);
    expect(foreign instanceof CairnError).toBe(true);
    expect(foreign instanceof ToolFailedError).toBe(false);
    expect(new ToolFailedError("x", { tool: "t", attempts: 1 }) instanceof other.CairnError).toBe(true);
  });

  it("keeps the ordinary check for a user's subclass and for other errors", () => {
    class Mine extends ContextOverflowError {}
    const mine = new Mine("m", { provider: "p" });
    expect(mine instanceof Mine).toBe(true);
    expect(mine instanceof ContextOverflowError).toBe(true);
    expect(new ContextOverflowError("c", { provider: "p" }) instanceof Mine).toBe(false);
    expect(new Error("plain") instanceof CairnError).toBe(false);
    expect((null as unknown as object) instanceof CairnError).toBe(false);
  });
});
