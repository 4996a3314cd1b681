/**
 * `cairn/server`: the HTTP API of a runtime on Hono — runs, their records, the acts on them
 * (with bearer tokens and roles), live events over Server-Sent Events and an OpenAPI document at
 * /openapi.json. `src/server/routes.ts` holds the route contract.
 * @example
 * import { Runtime } from "cairn";
 * import { createServer, loadTokens, serve } from "cairn/server";
 * const runtime = new Runtime({ agents: [reportBuilder] });
 * const server = createServer(runtime, { agents: [reportBuilder], tokens: loadTokens() });
 * const { url } = await serve(server, { host: "127.0.0.1", port: 4000 });
 * @module cairn/server
 */
export type { ApiErrorBody, ApiErrorCode, ServerErrorCode } from "./api/error-body.ts";
export type { RunPage } from "./api/responses.ts";
export { type Permission, ROLE_PERMISSIONS, ROLES, type Role } from "./api/roles.ts";
export type { TransitionEventData } from "./api/stream-events.ts";
export { type CairnServer, createServer, type ServerOptions } from "./server/app.ts";
export {
  LOCAL_ADMIN,
  type LoadTokensOptions,
  loadTokens,
  type Principal,
  parseTokensEnv,
  type TokenConfig,
  TokenConfigError,
} from "./server/auth.ts";
export { ERROR_STATUS, errorResponse } from "./server/errors.ts";
export { DEFAULT_BODY_LIMIT_BYTES } from "./server/json-body.ts";
export {
  InsecureBindError,
  type ListeningServer,
  type ListenOptions,
  NO_AUTH_NOTICE,
  serve,
} from "./server/serve.ts";
