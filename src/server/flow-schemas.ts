import { z } from "@hono/zod-openapi";

/** The flow-control fields (DESIGN §7, "Flow control") of the run record and of a start's body. */

/** The fields of a run record (`RunSchema`). */
export const RUN_FLOW_FIELDS = {
  concurrencyKey: z.string().optional().openapi({
    description: "flow control: at most concurrencyLimit runs with this key hold a lease at once",
  }),
  concurrencyLimit: z.number().int().optional(),
  priority: z
    .number()
    .int()
    .optional()
    .openapi({ description: "claim order: higher first, one level gained per minute of waiting; absent is 0" }),
};

/** The fields of a start (`StartRunBody`); `text` is the schemas' checked string. */
export function startFlowFields(text: (description: string, options: { max?: number }) => z.ZodString) {
  return {
    concurrencyKey: text("flow control: the run's concurrency key, over the agent's", { max: 1000 }).optional(),
    concurrencyLimit: z.number().int().min(1).optional().openapi({
      description: "runs with the key that may hold a lease at once; default the agent's flow.concurrency.limit",
    }),
    priority: z.number().int().min(-1000).max(1000).optional().openapi({
      description: "claim order, higher first; default the agent's, else 0",
    }),
  };
}
