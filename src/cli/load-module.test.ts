import { describe, expect, it } from "vitest";
import type { CairnConfig } from "./config.ts";
import { type AgentModule, mergeAgentModules } from "./load-module.ts";

const module = (path: string, config: CairnConfig): AgentModule => ({ file: path, path, agents: new Map(), config });

describe("mergeAgentModules: rate limits", () => {
  it("merges the named rate limits of several modules; one name declared alike by two is one limit", () => {
    const merged = mergeAgentModules([
      module("a.ts", { rateLimits: { openai: { limit: 60, per: "1m" } } }),
      module("b.ts", { rateLimits: { openai: { limit: 60, per: "1m" }, search: { limit: 20, per: "1s" } } }),
    ]);
    expect(merged.config.rateLimits).toEqual({ openai: { limit: 60, per: "1m" }, search: { limit: 20, per: "1s" } });
  });

  it("refuses one name declared differently by two modules, naming both", () => {
    expect(() =>
      mergeAgentModules([
        module("a.ts", { rateLimits: { openai: { limit: 60, per: "1m" } } }),
        module("b.ts", { rateLimits: { openai: { limit: 600, per: "1m" } } }),
      ]),
    ).toThrow(/rate limit "openai" is defined differently by a\.ts and b\.ts \(runtimeOptions\.rateLimits\)/);
  });
});
