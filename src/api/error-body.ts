import type { CairnErrorCode } from "../core/errors.ts";

/**
 * The body of every error the HTTP API answers with: `{ error: { code, message, details? } }`.
 * Codes are the runtime's `CairnErrorCode`s plus a few that only the server raises; the status
 * of each is the server's table (`server/errors.ts`).
 */

/** Codes only the HTTP layer raises (a request it refused before the runtime saw it). */
export type ServerErrorCode =
  /** No bearer token, or one the server does not know. */
  | "UNAUTHENTICATED"
  /** The token's roles do not allow the call. */
  | "FORBIDDEN"
  /** The body is not JSON (or not UTF-8). */
  | "MALFORMED_JSON"
  /** The body is larger than the server's `bodyLimitBytes`. */
  | "BODY_TOO_LARGE"
  /** A body sent with a Content-Type other than JSON. */
  | "UNSUPPORTED_MEDIA_TYPE"
  /** No route has this method and path. */
  | "NOT_FOUND"
  /** A browser page of another origin called the API (see server/request-guard.ts). */
  | "CROSS_ORIGIN"
  /** The Host header names a host this server does not answer to (see server/request-guard.ts). */
  | "UNKNOWN_HOST"
  /** A bug or an unexpected failure; the message says no more than that (the log has the rest). */
  | "INTERNAL";

/** Every code an API error body can carry. */
export type ApiErrorCode = CairnErrorCode | ServerErrorCode;

/** The body of every error response. */
export interface ApiErrorBody {
  error: { code: ApiErrorCode; message: string; details?: unknown };
}
