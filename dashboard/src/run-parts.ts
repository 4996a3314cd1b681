import type { RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../../src/api/http-api.ts";
import { api, type EffectEntry } from "./api.ts";

/** The parts of a run page's data, each fetched on its own. */
export type Part = "run" | "transitions" | "steps" | "effects" | "waits";
export const PARTS: Part[] = ["run", "transitions", "steps", "effects", "waits"];

/** What the page has of each part (null until it arrives). */
export interface Data {
  run: RunRecord | null;
  transitions: TransitionRecord[] | null;
  steps: StepRecord[] | null;
  effects: EffectEntry[] | null;
  waits: WaitRecord[] | null;
}

export const EMPTY: Data = { run: null, transitions: null, steps: null, effects: null, waits: null };

/** How each part is fetched. */
export const fetchers: { [K in Part]: (id: string) => Promise<Data[K]> } = {
  run: (id) => api.run(id).then((r) => r.run),
  transitions: (id) => api.transitions(id).then((r) => r.transitions),
  steps: (id) => api.steps(id).then((r) => r.steps),
  effects: (id) => api.effects(id).then((r) => r.effects),
  waits: (id) => api.waits(id).then((r) => r.waits),
};
