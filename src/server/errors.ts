import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ApiErrorBody, ApiErrorCode } from "../api/error-body.ts";
import { ApprovalRefusedError, CairnError } from "../core/errors.ts";

/**
 * How the HTTP API reports errors: every error is `{ error: { code, message, details? } }` with a
 * status taken from {@link ERROR_STATUS}, the one table that maps a code to a status. Codes are the
 * runtime's `CairnErrorCode`s plus a few that only the server raises (`ServerErrorCode`; the
 * body's types are in `api/error-body.ts`, shared with the clients).
 */

/**
 * The status of every code. `UNKNOWN_AGENT` and `UNKNOWN_WORKFLOW` are 422: the request is well
 * formed and its route exists, but it names something this server does not run (404 is kept for
 * a run, wait or effect the URL names). `APPROVAL_REFUSED` is 403 when the decider may not
 * decide (not an approver, no identity) and 409 when the approval itself stands in the way (the
 * digest is not its payload's: the decider looked at something else; it expired).
 */
export const ERROR_STATUS: { readonly [C in ApiErrorCode]: number | ((error: unknown) => number) } = {
  // The server's own.
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  MALFORMED_JSON: 400,
  BODY_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  NOT_FOUND: 404,
  CROSS_ORIGIN: 403,
  // Misdirected Request: this server does not serve that name.
  UNKNOWN_HOST: 421,
  INTERNAL: 500,
  // What the request named does not exist.
  RUN_NOT_FOUND: 404,
  SCHEDULE_NOT_FOUND: 404,
  WAIT_NOT_FOUND: 404,
  EFFECT_NOT_FOUND: 404,
  UNKNOWN_AGENT: 422,
  UNKNOWN_WORKFLOW: 422,
  UNKNOWN_TOOL: 422,
  UNKNOWN_DOMAIN: 422,
  UNKNOWN_MODEL: 422,
  UNKNOWN_MCP_SERVER: 422,
  UNKNOWN_SECRET: 422,
  // The request's data is wrong.
  INVALID_INPUT: 400,
  CONTRACT_ALTERED: 400,
  NOT_SERIALIZABLE: 400,
  STORAGE_REJECTED: 400,
  PAYLOAD_TOO_LARGE: 413,
  // The run is not in a state that takes the request.
  ILLEGAL_TRANSITION: 409,
  RUN_NOT_OPEN: 409,
  WAIT_CLOSED: 409,
  RUN_NOT_RESUMABLE: 409,
  ALREADY_DECIDED: 409,
  RUN_NOT_COMPLETED: 409,
  IMPORT_CONFLICT: 409,
  LEASE_LOST: 409,
  // The run's inbox holds maxUnreadSignals unread signals: it must read some first.
  SIGNAL_INBOX_FULL: 409,
  APPROVAL_REFUSED: (error) =>
    error instanceof ApprovalRefusedError && (error.why === "wrong_digest" || error.why === "expired") ? 409 : 403,
  // The server cannot serve now; the same request may succeed later.
  STORAGE: 503,
  RUNTIME_CLOSED: 503,
  WAIT_TIMEOUT: 504,
  // Endings and failures of runs and steps: never the answer to a request, so a bug if they are.
  INVALID_DEFINITION: 500,
  REPLAY_DIVERGENCE: 500,
  TOOL_FAILED: 500,
  STEP_TIMEOUT: 500,
  HEARTBEAT_TIMEOUT: 500,
  RUN_FAILED: 500,
  RUN_BLOCKED: 500,
  RUN_INTERRUPTED: 500,
  RUN_CANCELLED: 500,
  RUN_COMPENSATED: 500,
  RUN_NEEDS_RECONCILIATION: 500,
  RUN_MOVED: 500,
  APPROVAL_DENIED: 500,
  APPROVAL_EXPIRED: 500,
  CANCELLED: 500,
  VERSION_MISMATCH: 500,
  STEP_LIMIT: 500,
  HISTORY_LIMIT: 500,
  EFFECT_NOT_APPLIED: 500,
  EFFECT_REFUSED: 500,
  EFFECT_UNRESOLVED: 500,
  COMPENSATION_FAILED: 500,
  POLICY_DENIED: 500,
  BUDGET_EXCEEDED: 500,
  MODEL_UNAVAILABLE: 500,
  MODEL_REQUEST_REJECTED: 500,
  CONTEXT_OVERFLOW: 500,
  MAX_TURNS_EXCEEDED: 500,
  AGENT_LOOP_STUCK: 500,
  MCP_FAILED: 500,
  SANDBOX_LOST: 500,
  SANDBOX_UNAVAILABLE: 500,
  MISSING_PEER_DEPENDENCY: 500,
};

/** An error the HTTP layer raises itself (authentication, roles, bodies, routes). */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly details: unknown;
  constructor(code: ApiErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
  }
}

/** The status of an error's code (see {@link ERROR_STATUS}). */
export function statusOf(code: ApiErrorCode, error?: unknown): number {
  const entry = ERROR_STATUS[code];
  return typeof entry === "function" ? entry(error) : entry;
}

/** The status and body of the response to an error thrown while serving a request. */
export function errorResponse(error: unknown): { status: number; body: ApiErrorBody } {
  if (error instanceof ApiError) {
    return { status: statusOf(error.code, error), body: bodyOf(error.code, error.message, error.details) };
  }
  if (error instanceof CairnError) {
    return { status: statusOf(error.code, error), body: bodyOf(error.code, error.message, detailsOf(error)) };
  }
  if (error instanceof HTTPException) {
    // Raised by Hono's own middleware (its validators, a media-type check).
    const code: ApiErrorCode =
      error.status === 400
        ? /json/i.test(error.message)
          ? "MALFORMED_JSON"
          : "INVALID_INPUT"
        : error.status === 413
          ? "BODY_TOO_LARGE"
          : error.status === 415
            ? "UNSUPPORTED_MEDIA_TYPE"
            : error.status === 404
              ? "NOT_FOUND"
              : error.status === 401
                ? "UNAUTHENTICATED"
                : "INTERNAL";
    return { status: code === "INTERNAL" ? error.status : statusOf(code), body: bodyOf(code, error.message) };
  }
  return {
    status: 500,
    body: bodyOf("INTERNAL", "the server failed to handle the request; its log has the details"),
  };
}

/** Sends the error response for `error`. */
export function sendError(c: Context, error: unknown): Response {
  const { status, body } = errorResponse(error);
  const headers: Record<string, string> = {};
  if (body.error.code === "UNAUTHENTICATED") headers["WWW-Authenticate"] = 'Bearer realm="cairn"';
  return c.json(body, status as 400, headers);
}

function bodyOf(code: ApiErrorCode, message: string, details?: unknown): ApiErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** A Cairn error's own data (issues, why, bytes and limit …) as JSON, or undefined when it has none. */
function detailsOf(error: CairnError): unknown {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === "code" || key === "name" || key === "message" || key === "stack" || key === "cause") continue;
    own[key] = value;
  }
  if (Object.keys(own).length === 0) return undefined;
  try {
    return JSON.parse(JSON.stringify(own, (_key, value) => (typeof value === "symbol" ? String(value) : value)));
  } catch {
    return undefined;
  }
}
