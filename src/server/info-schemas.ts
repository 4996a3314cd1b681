import { z } from "@hono/zod-openapi";
import { ROLES } from "../api/roles.ts";

/** The schemas of `GET /api/me` and `GET /api/agents` (documented in /openapi.json). */

export const MeSchema = z
  .object({
    subject: z.string(),
    roles: z.array(z.enum(ROLES)),
    auth: z.enum(["token", "none"]),
    switchable: z.boolean().optional().openapi({
      description:
        "true on a development server without tokens that acts as whoever the X-Cairn-As and X-Cairn-Role headers name (`cairn dev`)",
    }),
  })
  .openapi("Me");

export const AgentSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    workflows: z.array(z.string()),
    inputs: z.record(z.string(), z.unknown()).openapi({
      description:
        "the JSON Schema of each workflow's input, for the workflows that declare one (`inputs` of the agent, converted with z.toJSONSchema); a workflow whose schema cannot be converted is left out",
    }),
    approvers: z.array(z.string()).openapi({
      description: "the approvers the agent's tools declare (`approval.approvers`), each once",
    }),
  })
  .openapi("Agent");
