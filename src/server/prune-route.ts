import { createRoute, z } from "@hono/zod-openapi";
import { administer, common, failure, ok, body as requestBody, security } from "./route-parts.ts";
import { RunStateSchema } from "./schemas.ts";
import type { ServerApp, ServerContext } from "./server-context.ts";

/**
 * `POST /api/runs/prune` (admin): `runtime.prune` over HTTP (DESIGN §7, "Retention"). Listed in
 * the route contract of `routes.ts`.
 */

const PruneBody = z
  .strictObject({
    olderThan: z
      .union([z.string().max(40), z.number().int().positive()])
      .openapi({ description: 'prune runs that ended longer ago than this: "30d", "12h", "90m", or milliseconds' }),
    states: z
      .array(RunStateSchema)
      .max(20)
      .optional()
      .openapi({ description: "ended states to prune (default: every terminal state but INTERRUPTED)" }),
    agent: z.string().min(1).max(200).optional(),
    batchSize: z.number().int().min(1).max(10_000).optional().openapi({ description: "runs per batch (default 500)" }),
    dryRun: z.boolean().optional().openapi({ description: "list what would be pruned; delete nothing" }),
  })
  .openapi("Prune");

const PruneResultSchema = z
  .object({
    pruned: z.number().int(),
    runIds: z.array(z.string()),
    batches: z.number().int(),
    endedBefore: z.number().int(),
    dryRun: z.boolean(),
  })
  .openapi("PruneResult");

export const pruneRoute = createRoute({
  method: "post",
  path: "/api/runs/prune",
  tags: ["acts"],
  summary: "Delete ended runs older than a duration, in batches (admin)",
  security,
  middleware: administer,
  request: { body: requestBody(PruneBody) },
  responses: {
    200: ok(PruneResultSchema, "What was pruned (or, with dryRun, would be)"),
    ...common,
    400: failure("INVALID_INPUT (a duration that does not parse, an open state) or MALFORMED_JSON"),
  },
});

/** Registers the prune route. */
export function registerPruneHandler(app: ServerApp, { runtime }: ServerContext): void {
  app.openapi(pruneRoute, async (c) => {
    const { olderThan, states, agent, batchSize, dryRun } = c.req.valid("json");
    const result = await runtime.prune({
      olderThan,
      ...(states !== undefined && { states }),
      ...(agent !== undefined && { agent }),
      ...(batchSize !== undefined && { batchSize }),
      ...(dryRun !== undefined && { dryRun }),
    });
    return c.json(result, 200);
  });
}
