import { toJson } from "../../serialize.ts";
import type { EnvelopeState } from "../envelope-state.ts";

/**
 * `ctx.continueAsNew(input)`: ends the execution with `continued` (the worker ends the run and
 * starts its successor with `input`). Never resolves.
 */
export function continueAsNew(x: EnvelopeState, input: unknown): Promise<never> {
  const json = toJson(input, `the input of continueAsNew (run ${x.run.id})`, x.host.maxPayloadBytes) ?? null;
  const diverged = x.cursor.diverged;
  if (diverged) return Promise.reject(diverged);
  x.settle?.({ kind: "continued", input: json });
  return new Promise<never>(() => {});
}
