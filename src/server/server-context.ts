import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { Logger } from "../core/logger.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Principal, ServerEnv } from "./auth.ts";
import { seesStacks, withoutStacks } from "./error-stacks.ts";
import type { RunFeed } from "./run-feed.ts";

/** What the route handlers share: the runtime, the agents it knows and the server's settings. */
export interface ServerContext {
  runtime: Runtime;
  /** The agents `GET /api/agents` lists. */
  agents: readonly AgentDefinition[];
  /** The module file of each agent this process loaded from one (recorded on the runs it starts). */
  agentModules: Readonly<Record<string, string>>;
  /** The all-runs transition feed. */
  feed: RunFeed;
  /** This server process's id in event ids (model offsets and feed sequences restart with it). */
  boot: string;
  logger: Logger;
  /** Per-run event streams look at the run this often (plus at once on this process's transitions). */
  pollIntervalMs: number;
  /** Heartbeat comment interval of the event streams. */
  heartbeatMs: number;
  /** Runs a page of `GET /api/runs` looks at, at most. */
  listScanLimit: number;
  /** Requests may name who they act as (`X-Cairn-As`, `X-Cairn-Role`): no tokens, `switchIdentity`. */
  switchable: boolean;
}

/** The Hono app the handlers are registered on. */
export type ServerApp = OpenAPIHono<ServerEnv>;

/**
 * A record as the handlers send it to `principal`: errors without their stack traces unless it
 * is an admin (error-stacks.ts). The response schemas (schemas.ts) document the records of
 * core/records.ts for /openapi.json; their TypeScript types come from `core/records.ts`, not from
 * the schemas, whose JSON-value and optional fields cannot match them exactly.
 */
export function wire(value: unknown, principal: Principal): any {
  return seesStacks(principal) ? value : withoutStacks(value);
}
