import { describe, expect, it } from "vitest";
import { InvalidDefinitionError } from "./errors.ts";
import { costOf, DEFAULT_PRICES, type ModelPrice, maxCostOf, priceOf, priceTable, roundUsd } from "./prices.ts";

describe("DEFAULT_PRICES", () => {
  it("prices the scripted model at 0 and the listed models at their list prices", () => {
    expect(DEFAULT_PRICES.scripted).toEqual({ inputPerMillion: 0, outputPerMillion: 0 });
    expect(DEFAULT_PRICES["gpt-4o"]).toEqual({ inputPerMillion: 2.5, outputPerMillion: 10 });
    expect(DEFAULT_PRICES["gpt-4o-mini"]).toEqual({ inputPerMillion: 0.15, outputPerMillion: 0.6 });
    expect(DEFAULT_PRICES["gpt-4.1"]).toEqual({ inputPerMillion: 2, outputPerMillion: 8 });
    expect(DEFAULT_PRICES["gpt-4.1-mini"]).toEqual({ inputPerMillion: 0.4, outputPerMillion: 1.6 });
    expect(DEFAULT_PRICES["claude-sonnet-4"]).toEqual({ inputPerMillion: 3, outputPerMillion: 15 });
    expect(DEFAULT_PRICES["claude-opus-4"]).toEqual({ inputPerMillion: 15, outputPerMillion: 75 });
    expect(DEFAULT_PRICES["claude-3-5-haiku"]).toEqual({ inputPerMillion: 0.8, outputPerMillion: 4 });
  });

  it("is frozen, entries included", () => {
    expect(Object.isFrozen(DEFAULT_PRICES)).toBe(true);
    expect(Object.isFrozen(DEFAULT_PRICES["gpt-4o"])).toBe(true);
  });
});

describe("priceTable", () => {
  it("is the defaults without extra prices", () => {
    expect(priceTable()).toBe(DEFAULT_PRICES);
  });

  it("adds new models and overrides defaults, leaving the defaults untouched", () => {
    const table = priceTable({
      "my-model": { inputPerMillion: 1, outputPerMillion: 2 },
      "gpt-4o": { inputPerMillion: 2, outputPerMillion: 9 },
    });
    expect(table["my-model"]).toEqual({ inputPerMillion: 1, outputPerMillion: 2 });
    expect(table["gpt-4o"]).toEqual({ inputPerMillion: 2, outputPerMillion: 9 });
    expect(table["claude-opus-4"]).toEqual(DEFAULT_PRICES["claude-opus-4"]);
    expect(DEFAULT_PRICES["gpt-4o"]).toEqual({ inputPerMillion: 2.5, outputPerMillion: 10 });
    expect(Object.isFrozen(table)).toBe(true);
  });

  it("accepts a price of 0", () => {
    expect(priceTable({ free: { inputPerMillion: 0, outputPerMillion: 0 } }).free).toEqual({
      inputPerMillion: 0,
      outputPerMillion: 0,
    });
  });

  it.each([
    [
      { inputPerMillion: -1, outputPerMillion: 1 },
      /prices\["m"\]\.inputPerMillion must be a finite number >= 0.*\(got -1\)/,
    ],
    [{ inputPerMillion: 1, outputPerMillion: Number.NaN }, /prices\["m"\]\.outputPerMillion .*\(got NaN\)/],
    [{ inputPerMillion: Number.POSITIVE_INFINITY, outputPerMillion: 1 }, /inputPerMillion .*\(got Infinity\)/],
    [{ inputPerMillion: "1", outputPerMillion: 1 }, /inputPerMillion must be a finite number/],
    [{ inputPerMillion: 1 }, /outputPerMillion .*\(got undefined\)/],
    [null, /prices\["m"\] must be \{ inputPerMillion, outputPerMillion \}/],
  ])("refuses the price %j", (price, message) => {
    const extra = { m: price } as unknown as Record<string, ModelPrice>;
    expect(() => priceTable(extra)).toThrow(InvalidDefinitionError);
    expect(() => priceTable(extra)).toThrow(message);
  });

  it("refuses an empty model key and a non-object table", () => {
    expect(() => priceTable({ "": { inputPerMillion: 1, outputPerMillion: 1 } })).toThrow(/empty model key/);
    expect(() => priceTable([] as unknown as Record<string, ModelPrice>)).toThrow(/prices must be an object/);
  });
});

describe("priceOf / costOf", () => {
  const table = DEFAULT_PRICES;

  it("prices an exact match", () => {
    expect(costOf(table, "gpt-4o", { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(12.5);
    expect(costOf(table, "claude-opus-4", { inputTokens: 1000, outputTokens: 2000 })).toBe(0.165);
  });

  it("prices by the longest key the model id starts with", () => {
    expect(priceOf(table, "gpt-4o-2024-08-06")).toBe(table["gpt-4o"]);
    expect(priceOf(table, "gpt-4o-mini-x")).toBe(table["gpt-4o-mini"]);
    expect(priceOf(table, "gpt-4o-mini")).toBe(table["gpt-4o-mini"]);
    expect(priceOf(table, "gpt-4.1-mini-2025-04-14")).toBe(table["gpt-4.1-mini"]);
    expect(priceOf(table, "gpt-4.1-2025-04-14")).toBe(table["gpt-4.1"]);
    expect(priceOf(table, "claude-sonnet-4-20250514")).toBe(table["claude-sonnet-4"]);
    expect(costOf(table, "gpt-4o-mini-2024-07-18", { inputTokens: 1_000_000, outputTokens: 0 })).toBe(0.15);
  });

  it("costs 0 for an unknown, empty or missing model", () => {
    expect(costOf(table, "llama-3", { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
    expect(costOf(table, "", { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
    expect(costOf(table, undefined, { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
    expect(costOf(table, "gpt", { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
  });

  it("does not take inherited object properties for prices", () => {
    expect(priceOf(table, "constructor")).toBeUndefined();
    expect(costOf(table, "toString", { inputTokens: 1, outputTokens: 1 })).toBe(0);
  });

  it("costs 0 for the scripted model", () => {
    expect(costOf(table, "scripted", { inputTokens: 123_456, outputTokens: 789 })).toBe(0);
  });

  it("rounds to 1e-9, so sums carry no float noise", () => {
    // unrounded, 0.1 + 0.2 is 0.30000000000000004
    const t = priceTable({ x: { inputPerMillion: 0.1, outputPerMillion: 0.2 } });
    const c = costOf(t, "x", { inputTokens: 1_000_000, outputTokens: 1_000_000 });
    expect(c).toBe(0.3);
    expect(costOf(table, "gpt-4o-mini", { inputTokens: 1, outputTokens: 1 })).toBe(0.00000075);
    // repeating decimals stop at the 9th; less than half a billionth of a dollar rounds away
    const third = priceTable({ y: { inputPerMillion: 1 / 3, outputPerMillion: 0.0001 } });
    expect(costOf(third, "y", { inputTokens: 1, outputTokens: 0 })).toBe(3.33e-7);
    expect(costOf(third, "y", { inputTokens: 0, outputTokens: 1 })).toBe(0);
    expect(costOf(third, "y", { inputTokens: 1000, outputTokens: 0 })).toBe(0.000333333);
    expect(roundUsd(0.1 + 0.2)).toBe(0.3);
  });

  it("counts negative or non-finite token counts as 0", () => {
    expect(costOf(table, "gpt-4o", { inputTokens: -1000, outputTokens: Number.NaN })).toBe(0);
    expect(costOf(table, "gpt-4o", { inputTokens: 1_000_000, outputTokens: -5 })).toBe(2.5);
  });
});

describe("maxCostOf", () => {
  it("prices only the output part", () => {
    expect(maxCostOf(DEFAULT_PRICES, "gpt-4o", 400)).toBe(0.004);
    expect(maxCostOf(DEFAULT_PRICES, "claude-opus-4-1", 1_000_000)).toBe(75);
  });

  it("is 0 for an unpriced model or no tokens", () => {
    expect(maxCostOf(DEFAULT_PRICES, "unknown", 1000)).toBe(0);
    expect(maxCostOf(DEFAULT_PRICES, undefined, 1000)).toBe(0);
    expect(maxCostOf(DEFAULT_PRICES, "gpt-4o", 0)).toBe(0);
  });
});
