import type { AgentDefinition, WorkflowInput, WorkflowOutput } from "../core/agent-definition.ts";

/**
 * The types that make `CairnClient<typeof agents>` check what it sends and type what it gets, as
 * in-process runs are (`runtime.run(agent, "workflow", input)`): the agent definitions are given
 * as a type only (`import type { agents } from "./agents.ts"`), so the client's bundle holds none
 * of their code. Agents are found by the name their `defineAgent` gave them.
 */

/** The agent definitions a client is typed with: a list (as `new Runtime({ agents })` takes) or an object of them. */
export type AgentSet = readonly unknown[] | { readonly [key: string]: unknown };

type Members<A> = A extends readonly (infer D)[] ? D : A[keyof A];

/** The definitions of `A` by agent name (an `@agent` class carries no types and is left out). */
export type AgentsByName<A> = {
  [D in Extract<Members<A>, AgentDefinition<any, any, string>> as D["name"]]: D;
};

/** Whether the client was given no agent types (then every name and input is accepted). */
type Untyped<A> = unknown extends A ? true : false;

/** An agent name the client may start: any string when untyped. */
export type RemoteAgentName<A> = Untyped<A> extends true ? string : keyof AgentsByName<A> & string;

/** A workflow name of agent `N`: any string when untyped. */
export type RemoteWorkflowName<A, N extends string> =
  Untyped<A> extends true
    ? string
    : N extends keyof AgentsByName<A>
      ? AgentsByName<A>[N] extends AgentDefinition<any, infer W, string>
        ? keyof W & string
        : never
      : never;

/** The input workflow `K` of agent `N` takes (`unknown` when untyped). */
export type RemoteInput<A, N extends string, K extends string> =
  Untyped<A> extends true ? unknown : N extends keyof AgentsByName<A> ? WorkflowInput<AgentsByName<A>[N], K> : never;

/** What workflow `K` of agent `N` returns, as `handle.result()` resolves (`unknown` when untyped). */
export type RemoteOutput<A, N extends string, K extends string> =
  Untyped<A> extends true
    ? unknown
    : N extends keyof AgentsByName<A>
      ? Awaited<WorkflowOutput<AgentsByName<A>[N], K>>
      : never;
