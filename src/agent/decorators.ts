import type { z } from "zod";
import type {
  AgentDefinition,
  CompensateMode,
  ToolDefinition,
  ToolMap,
  ToolOptions,
  WorkflowFunction,
} from "../core/agent-definition.ts";
import type { Budget } from "../core/budget.ts";
import type { ToolContext, WorkflowContext } from "../core/context.ts";
import { InvalidDefinitionError } from "../core/errors.ts";
import { assertName, defineTool, makeAgent } from "./define.ts";

/**
 * TC39 standard decorators (no `experimentalDecorators`) that produce the same
 * {@link AgentDefinition} as `defineAgent`:
 *
 * @example
 * @agent({ name: "report_builder", description: "Builds a quarterly report" })
 * class ReportBuilder {
 *   @tool async fetch_data(ctx: ToolContext, { quarter }: { quarter: string }) { ... }
 *   @workflow("build") async build(ctx: WorkflowContext, { quarter }: { quarter: string }) { ... }
 * }
 *
 * Methods run with `this` bound to one instance of the class, made with no arguments.
 */

// Decorator metadata needs Symbol.metadata, which Node 20 and 22 do not define yet. Compilers
// (tsc, esbuild) read it when the class is defined, after this module has loaded.
(Symbol as { metadata?: symbol }).metadata ??= Symbol.for("Symbol.metadata");

const PENDING = Symbol.for("cairn.agent.members");
const DEFINITION = Symbol.for("cairn.agent.definition");

interface Member {
  kind: "tool" | "workflow";
  method: string;
  name: string;
  options: ToolOptions;
}

type Method = (this: unknown, ctx: never, args: never) => unknown;

/** An agent: a `defineAgent` result or a class decorated with `@agent`. */
export type AgentLike = AgentDefinition | (abstract new (...args: never[]) => unknown);

function members(metadata: DecoratorMetadataObject | undefined, where: string): Member[] {
  if (!metadata) {
    throw new InvalidDefinitionError(
      `${where} needs decorator metadata; compile with TypeScript >= 5.2 or esbuild >= 0.21 (standard decorators)`,
    );
  }
  if (!Object.hasOwn(metadata, PENDING)) (metadata as Record<symbol, Member[]>)[PENDING] = [];
  return (metadata as Record<symbol, Member[]>)[PENDING] as Member[];
}

/** Options of `@agent`. */
export interface AgentDecoratorOptions {
  name: string;
  description?: string;
  /** Version of the workflow code, recorded on every transition. @default "1" */
  version?: string;
  /** Older workflow versions this code still runs. */
  compatibleVersions?: readonly string[];
  /** When runs undo their applied effects. @default "never" */
  compensate?: CompensateMode;
  /** Default budgets of its runs. @default {} */
  budget?: Budget;
}

/** Marks a class as an agent; its `@tool` and `@workflow` methods become its tools and workflows. */
export function agent(options: AgentDecoratorOptions) {
  return <C extends abstract new (...args: never[]) => unknown>(target: C, context: ClassDecoratorContext<C>): void => {
    const list = members(context.metadata, `@agent({ name: "${options.name}" })`);
    let instance: unknown;
    const self = () => {
      instance ??= new (target as unknown as new () => unknown)();
      return instance;
    };
    const tools: ToolMap = {};
    const workflows: Record<string, WorkflowFunction> = {};
    const inputs: Record<string, unknown> = {};
    for (const m of list) {
      const method = (target.prototype as Record<string, Method>)[m.method];
      if (typeof method !== "function") continue;
      if (m.kind === "tool") {
        const run = (ctx: ToolContext, args: unknown) => method.call(self(), ctx as never, args as never);
        tools[m.name] = (defineTool as (d: ToolOptions & { run: typeof run }) => ToolDefinition)({ ...m.options, run });
      } else {
        workflows[m.name] = (ctx: WorkflowContext, input: unknown) =>
          Promise.resolve(method.call(self(), ctx as never, input as never));
        if (m.options.input !== undefined) inputs[m.name] = m.options.input;
      }
    }
    const definition = makeAgent({ ...options, tools, workflows, inputs });
    Object.defineProperty(target, DEFINITION, { value: definition });
  };
}

/** Options of `@tool(...)`. */
export interface ToolDecoratorOptions<S extends z.ZodType = z.ZodType> extends ToolOptions<S> {
  /** Tool name. @default the method name */
  name?: string;
}

type ToolMethod = (ctx: ToolContext, args: any) => unknown;

/** Marks a method as a tool. Bare (`@tool`) or with options (`@tool({ retry, input, ... })`). */
export function tool<M extends ToolMethod>(method: M, context: ClassMethodDecoratorContext<unknown, M>): void;
export function tool(
  options: ToolDecoratorOptions,
): <M extends ToolMethod>(method: M, context: ClassMethodDecoratorContext<unknown, M>) => void;
export function tool(
  first: ToolMethod | ToolDecoratorOptions,
  context?: ClassMethodDecoratorContext,
): undefined | ((method: ToolMethod, context: ClassMethodDecoratorContext) => void) {
  if (typeof first === "function") {
    register(context as ClassMethodDecoratorContext, "tool", undefined, {});
    return undefined;
  }
  const { name, ...options } = first;
  return (_method, ctx) => register(ctx, "tool", name, options);
}

type WorkflowMethod = (ctx: WorkflowContext, input: any) => Promise<unknown>;

/**
 * Marks an async method as a workflow, named by the argument or the method name. `input`: its
 * input schema (see `AgentDefinition.inputs`), e.g. `@workflow("build", { input: z.object(...) })`.
 */
export function workflow(
  name?: string,
  options: { input?: z.ZodType } = {},
): <M extends WorkflowMethod>(method: M, context: ClassMethodDecoratorContext<unknown, M>) => void {
  return (_method, context) =>
    register(context, "workflow", name, options.input === undefined ? {} : { input: options.input });
}

function register(
  context: ClassMethodDecoratorContext,
  kind: "tool" | "workflow",
  name: string | undefined,
  options: ToolOptions,
): void {
  if (context.static || context.private || typeof context.name !== "string") {
    throw new InvalidDefinitionError(`@${kind} goes on a public instance method, not on ${String(context.name)}`);
  }
  const memberName = name ?? context.name;
  assertName(kind, memberName);
  members(context.metadata, `@${kind} ${context.name}`).push({ kind, method: context.name, name: memberName, options });
}

/** The agent definition of a `defineAgent` result or an `@agent` class. */
export function toAgentDefinition(agentLike: AgentLike): AgentDefinition {
  if (agentLike && typeof agentLike === "object" && (agentLike as AgentDefinition).kind === "agent") {
    return agentLike as AgentDefinition;
  }
  if (typeof agentLike === "function") {
    const definition = (agentLike as unknown as Record<symbol, AgentDefinition | undefined>)[DEFINITION];
    if (definition) return definition;
    throw new InvalidDefinitionError(
      `class ${agentLike.name || "(anonymous)"} is not an agent; decorate it with @agent({ name: "..." })`,
    );
  }
  throw new InvalidDefinitionError("not an agent: pass a defineAgent(...) result or an @agent class");
}

/** True for a `defineAgent` result or an `@agent` class. */
export function isAgentLike(value: unknown): value is AgentLike {
  if (value && typeof value === "object") return (value as AgentDefinition).kind === "agent";
  return typeof value === "function" && (value as unknown as Record<symbol, unknown>)[DEFINITION] !== undefined;
}
