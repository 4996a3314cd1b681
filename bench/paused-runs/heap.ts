import { collectGarbage } from "./options.ts";

/** A full gc, three times, with a turn between for the finalizers each schedules; then the heap used. */
export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    collectGarbage?.();
    await new Promise((r) => setTimeout(r, 10));
  }
  return process.memoryUsage().heapUsed;
}

/**
 * Objects of an execution not yet collected, by what they show: a `ctx` is alive while its
 * workflow's frame is (it also reaches its envelope); an execution's `input` object is the one in
 * the run record the envelope and the worker's active run hold, so it is alive while they are.
 */
export const live = { ctx: 0, input: 0 };
export const executions = new FinalizationRegistry<"ctx" | "input">((what) => {
  live[what]--;
});
