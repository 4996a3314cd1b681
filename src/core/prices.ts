import { InvalidDefinitionError } from "./errors.ts";

/**
 * Model prices, for the `costUsd` of model usage and the `costUsd` budget (DESIGN §6). A table maps
 * a model key to its price; a model id is priced by its exact key or else the longest key it
 * starts with, so dated ids (`gpt-4o-2024-08-06`) find their family. Nothing here does I/O.
 */

/** The list price of one model, in US dollars per million tokens. */
export interface ModelPrice {
  /** USD per million input (prompt) tokens. */
  inputPerMillion: number;
  /** USD per million output (completion) tokens. */
  outputPerMillion: number;
}

/** A price table: model key → price. */
export type PriceTable = Readonly<Record<string, Readonly<ModelPrice>>>;

/**
 * The built-in prices: `scripted` (the test model) is free, and a handful of widely published list
 * prices, in USD per million tokens. Prices drift and differ by contract, region and tier, so treat
 * these as a starting point: extend or override them with `new Runtime({ prices })`, e.g.
 * `prices: { "gpt-4o": { inputPerMillion: 2.5, outputPerMillion: 10 }, "my-model": { ... } }`.
 * A model that no key matches costs 0.
 */
export const DEFAULT_PRICES: PriceTable = freezeTable({
  scripted: { inputPerMillion: 0, outputPerMillion: 0 },
  "gpt-4o": { inputPerMillion: 2.5, outputPerMillion: 10 },
  "gpt-4o-mini": { inputPerMillion: 0.15, outputPerMillion: 0.6 },
  "gpt-4.1": { inputPerMillion: 2, outputPerMillion: 8 },
  "gpt-4.1-mini": { inputPerMillion: 0.4, outputPerMillion: 1.6 },
  "claude-sonnet-4": { inputPerMillion: 3, outputPerMillion: 15 },
  "claude-opus-4": { inputPerMillion: 15, outputPerMillion: 75 },
  "claude-3-5-haiku": { inputPerMillion: 0.8, outputPerMillion: 4 },
});

/**
 * The runtime's price table: {@link DEFAULT_PRICES} with `extra` merged over it (an entry of
 * `extra` replaces the default of the same key).
 * @throws InvalidDefinitionError for an empty key or a price that is not a finite number >= 0.
 */
export function priceTable(extra?: Record<string, ModelPrice>): PriceTable {
  if (extra === undefined) return DEFAULT_PRICES;
  if (extra === null || typeof extra !== "object" || Array.isArray(extra)) {
    throw new InvalidDefinitionError(
      `prices must be an object of model key → { inputPerMillion, outputPerMillion } (got ${Array.isArray(extra) ? "an array" : String(extra)})`,
    );
  }
  const merged: Record<string, ModelPrice> = { ...DEFAULT_PRICES };
  for (const [model, price] of Object.entries(extra)) {
    if (model === "") {
      throw new InvalidDefinitionError('prices has an empty model key: key each price by a model id such as "gpt-4o"');
    }
    if (price === null || typeof price !== "object") {
      throw new InvalidDefinitionError(
        `prices["${model}"] must be { inputPerMillion, outputPerMillion } in USD per million tokens (got ${String(price)})`,
      );
    }
    for (const field of ["inputPerMillion", "outputPerMillion"] as const) {
      const value: unknown = price[field];
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
        throw new InvalidDefinitionError(
          `prices["${model}"].${field} must be a finite number >= 0, in USD per million tokens (got ${String(value)})`,
        );
      }
    }
    merged[model] = { inputPerMillion: price.inputPerMillion, outputPerMillion: price.outputPerMillion };
  }
  return freezeTable(merged);
}

/**
 * The price of a model: its exact key, else the longest key the model id starts with
 * (`gpt-4o-2024-08-06` → `gpt-4o`, `gpt-4o-mini-x` → `gpt-4o-mini`), else undefined.
 */
export function priceOf(table: PriceTable, model: string | undefined): Readonly<ModelPrice> | undefined {
  if (model === undefined || model === "") return undefined;
  if (Object.hasOwn(table, model)) return table[model];
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (key !== "" && model.startsWith(key) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/**
 * What a model call cost in USD, from the table (see {@link priceOf}); 0 for a model without a
 * price. Rounded to 1e-9 so that sums do not collect float noise. A token count that is negative
 * or not finite counts as 0, so bad usage data can never make a cost negative or NaN.
 */
export function costOf(
  table: PriceTable,
  model: string | undefined,
  usage: { inputTokens: number; outputTokens: number },
): number {
  const price = priceOf(table, model);
  if (!price) return 0;
  return roundUsd(
    (tokens(usage.inputTokens) * price.inputPerMillion + tokens(usage.outputTokens) * price.outputPerMillion) /
      1_000_000,
  );
}

/**
 * The most a call's output can cost: `maxOutputTokens` at the model's output price (the input part
 * is left out). The runtime refuses a call whose declared maximum output would take the run past
 * its `costUsd` budget.
 */
export function maxCostOf(table: PriceTable, model: string | undefined, maxOutputTokens: number): number {
  const price = priceOf(table, model);
  if (!price) return 0;
  return roundUsd((tokens(maxOutputTokens) * price.outputPerMillion) / 1_000_000);
}

/** Rounds a dollar figure to 1e-9 (a billionth of a dollar). */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

function tokens(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

function freezeTable(table: Record<string, ModelPrice>): PriceTable {
  const out: Record<string, Readonly<ModelPrice>> = {};
  for (const [key, price] of Object.entries(table)) out[key] = Object.freeze({ ...price });
  return Object.freeze(out);
}
