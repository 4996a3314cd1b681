import type { z } from "zod";
import type {
  AgentDefinition,
  CompensateMode,
  ToolDefinition,
  ToolMap,
  ToolOptions,
  WorkflowFunction,
  WorkflowInputs,
} from "../core/agent-definition.ts";
import { type Budget, validateBudget } from "../core/budget.ts";
import type { ToolContext, WorkflowContext } from "../core/context.ts";
import { InvalidDefinitionError } from "../core/errors.ts";
import { type AgentFlow, validateAgentFlow } from "../core/flow-control.ts";
import { isInputSchema } from "../core/input-schema.ts";
import { checkRateLimitSpec } from "../core/rate-limits.ts";
import { resolveRetryPolicy } from "../core/retry-policy.ts";

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;

/** Checks a name used for an agent, tool or workflow. */
export function assertName(kind: string, name: string): void {
  if (!NAME.test(name)) {
    throw new InvalidDefinitionError(
      `${kind} name ${JSON.stringify(name)} is not valid: use a letter then letters, digits, "_", "." or "-" (at most 128)`,
    );
  }
}

/**
 * Defines a tool. With an `input` zod schema the arguments are validated before every run and
 * typed from the schema; without one, type the `run` function's second parameter.
 *
 * @example
 * const fetchData = defineTool({
 *   input: z.object({ quarter: z.string() }),
 *   run: (ctx, { quarter }) => ctx.domain("finance", "quarterly", { quarter }),
 * });
 */
export function defineTool<S extends z.ZodType, R>(
  definition: ToolOptions<S> & { input: S; run: (ctx: ToolContext, args: z.output<S>) => R },
): ToolDefinition<z.input<S>, Awaited<R>>;
export function defineTool<A, R>(
  definition: ToolOptions & { input?: undefined; run: (ctx: ToolContext, args: A) => R },
): ToolDefinition<A, Awaited<R>>;
export function defineTool(
  definition: ToolOptions & { run: (ctx: ToolContext, args: unknown) => unknown },
): ToolDefinition {
  if (typeof definition.run !== "function") {
    throw new InvalidDefinitionError(
      "defineTool needs a `run` function: defineTool({ run: async (ctx, args) => ... })",
    );
  }
  if (definition.input !== undefined && !isInputSchema(definition.input)) {
    throw new InvalidDefinitionError("defineTool `input` must be a zod schema, e.g. z.object({ quarter: z.string() })");
  }
  resolveRetryPolicy(definition.retry);
  for (const key of ["startToCloseTimeoutMs", "heartbeatTimeoutMs"] as const) {
    const v = definition[key];
    if (v !== undefined && !(v > 0)) throw new InvalidDefinitionError(`defineTool ${key} must be > 0 (got ${v})`);
  }
  const approval = definition.approval;
  if (approval !== undefined && !(approval.expiresInMs > 0)) {
    throw new InvalidDefinitionError(
      `defineTool approval.expiresInMs must be > 0 (got ${approval.expiresInMs}); e.g. approval: { expiresInMs: 24 * 3600_000 }`,
    );
  }
  return { ...definition, kind: "tool", run: definition.run as ToolDefinition["run"] };
}

/** What `defineAgent` takes. */
export interface AgentSpec<T extends ToolMap, W> {
  /** Unique name of the agent in a runtime. */
  name: string;
  description?: string;
  /** Version of the workflow code, recorded on every transition. @default "1" */
  version?: string;
  /** Older workflow versions this code still runs; see `AgentDefinition.compatibleVersions`. @default [] */
  compatibleVersions?: readonly string[];
  /** When runs undo their applied effects; see `AgentDefinition.compensate`. @default "never" */
  compensate?: CompensateMode;
  /** Default budgets of its runs; see `AgentDefinition.budget`. @default {} */
  budget?: Budget;
  tools: T;
  workflows: W & Record<string, (ctx: WorkflowContext<T>, input: any) => Promise<unknown>>;
  /** Input schemas of its workflows; see `AgentDefinition.inputs`. @default {} */
  inputs?: WorkflowInputs<W>;
  /** Concurrency limits and priorities of its runs; see `AgentDefinition.flow`. @default none */
  flow?: AgentFlow;
}

/**
 * Defines an agent: its tools and the workflows that call them. `ctx.tool` in the workflows is
 * typed from `tools`: a wrong tool name or argument is a compile error.
 *
 * @example
 * export const reportBuilder = defineAgent({
 *   name: "report_builder",
 *   tools: { fetch_data: fetchData },
 *   workflows: {
 *     async build(ctx, { quarter }: { quarter: string }) {
 *       return ctx.tool("fetch_data", { quarter });
 *     },
 *   },
 *   // Optional: checked when a run starts (a bad input starts nothing) and before each execution.
 *   inputs: { build: z.object({ quarter: z.string() }) },
 * });
 */
export function defineAgent<
  const T extends ToolMap,
  W extends Record<string, (ctx: WorkflowContext<T>, input: any) => Promise<unknown>>,
  const N extends string = string,
>(spec: {
  name: N;
  description?: string;
  version?: string;
  compatibleVersions?: readonly string[];
  compensate?: CompensateMode;
  budget?: Budget;
  tools: T;
  workflows: W;
  inputs?: WorkflowInputs<W>;
  flow?: AgentFlow;
}): AgentDefinition<T, W, N> {
  return makeAgent(spec) as AgentDefinition<T, W, N>;
}

/** Validates and freezes an agent (shared by `defineAgent` and the decorators). */
export function makeAgent(spec: {
  name: string;
  description?: string | undefined;
  version?: string | undefined;
  compatibleVersions?: readonly string[] | undefined;
  compensate?: CompensateMode | undefined;
  budget?: Budget | undefined;
  tools: ToolMap;
  workflows: Record<string, WorkflowFunction<any>>;
  inputs?: Readonly<Record<string, unknown>> | undefined;
  flow?: AgentFlow | undefined;
}): AgentDefinition {
  if (!spec || typeof spec !== "object") throw new InvalidDefinitionError("defineAgent needs an object");
  assertName("agent", spec.name);
  const tools = spec.tools ?? {};
  const workflows = spec.workflows ?? {};
  for (const [name, tool] of Object.entries(tools)) {
    assertName(`tool (agent "${spec.name}")`, name);
    if (tool?.kind !== "tool") {
      throw new InvalidDefinitionError(
        `tool "${name}" of agent "${spec.name}" is not a tool definition; wrap it: ${name}: defineTool({ run: ... })`,
      );
    }
  }
  const names = Object.keys(workflows);
  if (names.length === 0) {
    throw new InvalidDefinitionError(
      `agent "${spec.name}" has no workflows; add workflows: { name: async (ctx, input) => ... }`,
    );
  }
  for (const name of names) {
    assertName(`workflow (agent "${spec.name}")`, name);
    if (typeof workflows[name] !== "function") {
      throw new InvalidDefinitionError(`workflow "${name}" of agent "${spec.name}" is not a function`);
    }
  }
  const inputs = spec.inputs ?? {};
  for (const [name, schema] of Object.entries(inputs)) {
    if (!names.includes(name)) {
      throw new InvalidDefinitionError(
        `inputs.${name} of agent "${spec.name}" names no workflow (workflows: ${names.join(", ")}); key each schema by its workflow's name`,
      );
    }
    if (schema !== undefined && !isInputSchema(schema)) {
      throw new InvalidDefinitionError(
        `inputs.${name} of agent "${spec.name}" must be a zod schema, e.g. z.object({ quarter: z.string() })`,
      );
    }
  }
  const compensate = spec.compensate ?? "never";
  if (!["never", "on_failure", "on_failure_or_cancel"].includes(compensate)) {
    throw new InvalidDefinitionError(
      `agent "${spec.name}" compensate must be "never", "on_failure" or "on_failure_or_cancel" (got ${JSON.stringify(compensate)})`,
    );
  }
  for (const [name, tool] of Object.entries(tools)) checkToolOptions(spec.name, name, tool, tools);
  const budget = validateBudget(spec.budget ?? {}, `the budget of agent "${spec.name}"`);
  validateAgentFlow(spec.name, spec.flow, names);
  return Object.freeze({
    kind: "agent" as const,
    name: spec.name,
    description: spec.description ?? "",
    version: spec.version ?? "1",
    compatibleVersions: Object.freeze([...(spec.compatibleVersions ?? [])]),
    compensate,
    budget: Object.freeze(budget),
    tools: byName(tools),
    workflows: byName(workflows),
    inputs: byName(inputs) as WorkflowInputs<Record<string, WorkflowFunction>>,
    ...(spec.flow === undefined ? {} : { flow: spec.flow }),
  });
}

/**
 * What of tool `name`'s options needs its agent: its compensate tool is one of `tools`; its
 * `rateLimit`, as far as it can be checked without the runtime (a limit of its own is valid, a name
 * is not empty; the runtime checks that it declares the name).
 */
function checkToolOptions(agent: string, name: string, tool: ToolDefinition, tools: ToolMap): void {
  const declared = tool.effect?.compensate;
  const target = typeof declared === "string" ? declared : declared?.tool;
  if (declared !== undefined && !(target && tools[target])) {
    throw new InvalidDefinitionError(
      `tool "${name}" of agent "${agent}" names compensate tool ${JSON.stringify(target)}, which the agent does not have; add it to the agent's tools`,
    );
  }
  const limit: unknown = tool.rateLimit;
  const where = `tool "${name}" of agent "${agent}"`;
  if (limit !== undefined && typeof limit !== "string") checkRateLimitSpec(limit, where);
  else if (typeof limit === "string" && limit.trim() === "") {
    throw new InvalidDefinitionError(
      `${where}: rateLimit is an empty name; name one of the runtime's rateLimits, or give { limit, per }`,
    );
  }
}

/**
 * A frozen copy of `entries` without a prototype: a name that comes from outside (a workflow named
 * in a request, a tool a model chose) finds only what the agent defines, never `constructor` or
 * `toString`.
 */
function byName<V>(entries: Readonly<Record<string, V>>): Readonly<Record<string, V>> {
  return Object.freeze(Object.assign(Object.create(null) as Record<string, V>, entries));
}
