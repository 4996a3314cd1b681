import { z } from "@hono/zod-openapi";
import type { AgentInfo } from "../api/responses.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { Json } from "../core/records.ts";

/**
 * What `GET /api/agents` says of an agent: its workflows, the JSON Schema of each declared input
 * (zod 4's `z.toJSONSchema`, as the input is written: defaults optional), and the approvers its
 * tools declare. Computed once per server.
 */
export function agentInfo(agent: AgentDefinition): AgentInfo {
  const inputs: { [workflow: string]: Json } = {};
  for (const [workflow, schema] of Object.entries(agent.inputs ?? {})) {
    const converted = jsonSchemaOf(schema);
    if (converted !== undefined) inputs[workflow] = converted;
  }
  const approvers = new Set<string>();
  for (const tool of Object.values(agent.tools)) for (const name of tool.approval?.approvers ?? []) approvers.add(name);
  return {
    name: agent.name,
    description: agent.description,
    version: agent.version,
    workflows: Object.keys(agent.workflows),
    inputs,
    approvers: [...approvers],
  };
}

/**
 * The JSON Schema of a zod schema, or undefined when it is not one zod can convert (a schema of
 * another library, a zod 3 schema); what JSON Schema cannot say (a transform, a date) is `{}`.
 */
function jsonSchemaOf(schema: unknown): Json | undefined {
  if (!schema || typeof schema !== "object" || !("_zod" in schema)) return undefined;
  try {
    const converted = z.toJSONSchema(schema as z.ZodType, { io: "input", unrepresentable: "any" }) as {
      [key: string]: Json;
    };
    delete converted.$schema;
    return converted;
  } catch {
    return undefined;
  }
}
