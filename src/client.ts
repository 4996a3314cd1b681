/**
 * `cairn/client`: a typed client of the HTTP API of `cairn/server`, with the runtime's method
 * names (`run`, `getRun`, `listRuns`, `signal`, `answer`, `approve`, …) and its live events over
 * Server-Sent Events. Uses `fetch`; works in Node 20 and in browsers.
 * @example
 * import { CairnClient } from "cairn/client";
 * import type { agents } from "./agents.ts"; // the list the server's runtime is made with
 * const client = new CairnClient<typeof agents>({ baseUrl: "http://127.0.0.1:4000", token: process.env.CAIRN_TOKEN });
 * const run = await client.run("report_builder", "build", { quarter: "2026-Q3" });
 * console.log(await run.result());
 * @module cairn/client
 */

export { type RawSseEvent, readSse } from "./api/sse-reader.ts";
export type {
  AgentSet,
  AgentsByName,
  RemoteAgentName,
  RemoteInput,
  RemoteOutput,
  RemoteWorkflowName,
} from "./client/agent-types.ts";
export { CairnClient, type CairnClientOptions, type RemoteStartOptions } from "./client/cairn-client.ts";
export { CairnHttpError } from "./client/http-error.ts";
export type {
  RemoteAgent,
  RemoteEvent,
  RemoteEventsOptions,
  RemotePrincipal,
  RemoteRunFilter,
  RemoteRunHandle,
  RemoteRunHistory,
  RemoteRunPage,
} from "./client/remote-types.ts";
