import { values } from "./options.ts";

/** What the main process measures, from its command line (see bench/postgres.ts). */
export interface Settings {
  STEPS: number;
  ROUNDS: number;
  WARM_UP: number;
  RUNS: number;
  RUN_STEPS: number;
  WORKERS: number[];
  BATCHES: number;
  WARM_UP_BATCHES: number;
  SIGNALS: number;
  SIGNAL_WARM_UP: number;
  /** ms the worker sits idle before each signal of the second series. */
  SIGNAL_GAP: number;
}

export function settingsOf(): Settings {
  const STEPS = Number(values.steps);
  const ROUNDS = Number(values.rounds);
  const WARM_UP = Number(values["warm-up"]);
  const RUNS = Number(values.runs);
  const RUN_STEPS = Number(values["run-steps"]);
  const WORKERS = values.workers.split(",").map(Number);
  const BATCHES = Number(values.batches);
  const WARM_UP_BATCHES = Number(values["warm-up-batches"]);
  const SIGNALS = Number(values.signals);
  const SIGNAL_WARM_UP = 20;
  const SIGNAL_GAP = Number(values["signal-gap"]);
  return {
    STEPS,
    ROUNDS,
    WARM_UP,
    RUNS,
    RUN_STEPS,
    WORKERS,
    BATCHES,
    WARM_UP_BATCHES,
    SIGNALS,
    SIGNAL_WARM_UP,
    SIGNAL_GAP,
  };
}
