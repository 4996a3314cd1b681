import { createRoute, z } from "@hono/zod-openapi";
import { InvalidDefinitionError, InvalidInputError } from "../core/errors.ts";
import type { Json } from "../core/records.ts";
import type { ScheduleOptions } from "../core/schedules.ts";
import type { ScheduleView } from "../runtime/runtime-schedules.ts";
import { requires } from "./auth.ts";
import { body, common, failure, ok, operate, read, security } from "./route-parts.ts";
import { EmptyBody, RunStateSchema } from "./schemas.ts";
import type { ServerApp, ServerContext } from "./server-context.ts";

/*
 * The schedule routes of the HTTP API (DESIGN §4 *Schedules*; the rest of the contract is in
 * routes.ts). Reading needs any role, changing a schedule the operator role.
 *
 * GET    /api/schedules                → { schedules: ScheduleView[] }  by id, each with nextTimes (the next ten)
 *                                        and lastRun (its id, state now and tick) or null
 * GET    /api/schedules/:id            → { schedule }
 * PUT    /api/schedules/:id { agent, workflow, input?, cron?, timeZone?, every?, overlap?, catchUp?, catchUpLimit?, paused? }
 *                                      → { schedule }  created, or its definition replaced
 * POST   /api/schedules/:id/pause {}   → { schedule }
 * POST   /api/schedules/:id/resume {}  → { schedule }
 * POST   /api/schedules/:id/trigger {} → 202 { runId: string | null, tickAt }  a worker running the agent starts it
 * DELETE /api/schedules/:id            → { deleted: true }  (its runs stay)
 */

const ScheduleParams = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "id", in: "path" }, description: "the schedule's id" }),
});

const ScheduleSchema = z
  .object({
    id: z.string(),
    agent: z.string(),
    workflow: z.string(),
    input: z.unknown(),
    cron: z.string().nullable(),
    timeZone: z.string().nullable(),
    everyMs: z.number().nullable(),
    overlap: z.enum(["skip", "bufferOne", "allow", "cancelPrevious"]),
    catchUp: z.enum(["none", "latest", "all"]),
    catchUpLimit: z.number().int(),
    paused: z.boolean(),
    nextAt: z.number().nullable(),
    lastTickAt: z.number().nullable(),
    lastRunId: z.string().nullable(),
    pendingAt: z.number().nullable(),
    bufferedAt: z.number().nullable(),
    version: z.number().int(),
    createdAt: z.number(),
    updatedAt: z.number(),
    nextTimes: z.array(z.number()).openapi({ description: "the next ten fire times (epoch ms); empty while paused" }),
    lastRun: z
      .object({
        id: z.string(),
        state: RunStateSchema,
        scheduledFor: z.string().nullable().openapi({ description: "the tick it was started for (ISO 8601)" }),
      })
      .nullable()
      .openapi({
        description:
          "the run `lastRunId` names (the last tick's that started one, or a trigger's) as it is now; null when none or pruned",
      }),
  })
  .openapi("Schedule");

const ScheduleBody = z
  .strictObject({
    agent: z.string().min(1).max(200),
    workflow: z.string().min(1).max(200),
    input: z.unknown().optional(),
    cron: z.string().max(200).optional().openapi({ description: "five or six cron fields" }),
    timeZone: z.string().max(100).optional().openapi({ description: "IANA zone of cron (default UTC)" }),
    every: z
      .union([z.number().int(), z.string().max(20)])
      .optional()
      .openapi({ description: 'ms, or "30s", "5m", "1h", "1d"' }),
    overlap: z.enum(["skip", "bufferOne", "allow", "cancelPrevious"]).optional(),
    catchUp: z.enum(["none", "latest", "all"]).optional(),
    catchUpLimit: z.number().int().optional(),
    paused: z.boolean().optional(),
  })
  .openapi("ScheduleDefinition");

const one = ok(z.object({ schedule: ScheduleSchema }), "The schedule");
const notFound = { 404: failure("SCHEDULE_NOT_FOUND") };
const change = {
  ...common,
  400: failure(
    "INVALID_INPUT (a definition that cannot work; a trigger while the last one is being started) or MALFORMED_JSON",
  ),
  ...notFound,
};
const tags = ["schedules"];

export const listSchedulesRoute = createRoute({
  method: "get",
  path: "/api/schedules",
  tags,
  summary: "List schedules with their next fire times",
  security,
  middleware: read,
  responses: { 200: ok(z.object({ schedules: z.array(ScheduleSchema) }), "The schedules, by id"), ...common },
});

export const getScheduleRoute = createRoute({
  method: "get",
  path: "/api/schedules/{id}",
  tags,
  summary: "A schedule with its next ten fire times",
  security,
  middleware: read,
  request: { params: ScheduleParams },
  responses: { 200: one, ...common, ...notFound },
});

export const putScheduleRoute = createRoute({
  method: "put",
  path: "/api/schedules/{id}",
  tags,
  summary: "Create a schedule, or replace its definition",
  security,
  middleware: operate,
  request: { params: ScheduleParams, body: body(ScheduleBody) },
  responses: { 200: one, ...change },
});

const action = (name: "pause" | "resume", summary: string) =>
  createRoute({
    method: "post",
    path: `/api/schedules/{id}/${name}`,
    tags,
    summary,
    security,
    middleware: operate,
    request: { params: ScheduleParams, body: body(EmptyBody) },
    responses: { 200: one, ...change },
  });
export const pauseScheduleRoute = action("pause", "Pause a schedule");
export const resumeScheduleRoute = action("resume", "Resume a schedule from its next tick after now");

export const triggerScheduleRoute = createRoute({
  method: "post",
  path: "/api/schedules/{id}/trigger",
  tags,
  summary: "Start a run of the schedule now",
  security,
  middleware: operate,
  request: { params: ScheduleParams, body: body(EmptyBody) },
  responses: {
    202: ok(
      z.object({ runId: z.string().nullable(), tickAt: z.number() }),
      "The tick is marked; runId once a worker of this process started it, else null",
    ),
    ...change,
  },
});

export const deleteScheduleRoute = createRoute({
  method: "delete",
  path: "/api/schedules/{id}",
  tags,
  summary: "Delete a schedule (its runs stay)",
  security,
  middleware: [requires("operate")],
  request: { params: ScheduleParams },
  responses: { 200: ok(z.object({ deleted: z.literal(true) }), "Deleted"), ...common, ...notFound },
});

/** The handlers of the schedule routes. */
export function registerScheduleHandlers(app: ServerApp, { runtime }: ServerContext): void {
  const s = runtime.schedules;
  /** A schedule as the routes answer it: with the state of its last run, read now. */
  const withRun = async (view: ScheduleView) => {
    const run = view.lastRunId === null ? undefined : await runtime.backend.getRun(view.lastRunId);
    const scheduledFor = run?.meta.scheduledFor;
    const lastRun = run
      ? { id: run.id, state: run.state, scheduledFor: typeof scheduledFor === "string" ? scheduledFor : null }
      : null;
    return { ...view, lastRun };
  };
  app.openapi(listSchedulesRoute, async (c) =>
    c.json({ schedules: await Promise.all((await s.list()).map(withRun)) }, 200),
  );
  app.openapi(getScheduleRoute, async (c) =>
    c.json({ schedule: await withRun(await s.get(c.req.valid("param").id)) }, 200),
  );
  app.openapi(putScheduleRoute, async (c) => {
    const { id } = c.req.valid("param");
    const given = c.req.valid("json");
    const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
    const options = { ...defined, id, input: (given.input ?? null) as Json } as ScheduleOptions;
    return c.json({ schedule: await withRun(await refused(() => s.define(options))) }, 200);
  });
  app.openapi(pauseScheduleRoute, async (c) =>
    c.json({ schedule: await withRun(await refused(() => s.pause(c.req.valid("param").id))) }, 200),
  );
  app.openapi(resumeScheduleRoute, async (c) =>
    c.json({ schedule: await withRun(await refused(() => s.resume(c.req.valid("param").id))) }, 200),
  );
  app.openapi(triggerScheduleRoute, async (c) => c.json(await refused(() => s.trigger(c.req.valid("param").id)), 202));
  app.openapi(deleteScheduleRoute, async (c) => {
    await s.delete(c.req.valid("param").id);
    return c.json({ deleted: true as const }, 200);
  });
}

/**
 * Runs a change asked by a request. What the schedules refuse (a definition that cannot work, a
 * trigger while the last one is being started, a schedule that kept changing) is the request's to
 * fix or retry: 400 with the refusal's message, not a 500.
 */
async function refused<T>(change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (error instanceof InvalidDefinitionError) throw new InvalidInputError(error.message);
    throw error;
  }
}
